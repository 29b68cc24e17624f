// One fleet of the propagation benchmark: the standalone service (startTestService: port 0, temporary
// manifests and state folders) serving one bundle, and N real OPAs started from the configuration the
// service writes for that bundle (<state-dir>/opa/<tenant>/<bundle>.yaml), as the caller changes it
// (the baseline's plain polling). edit() changes the one rule, so the bundle's revision moves, and
// times two things from the service's publish of that revision (the controller's store.publish()
// call that announces it): until the agent registry holds every agent with the revision active, taken
// when the registry announces the report that completes it; and until every OPA answers the revision
// from /v1/data/system/bundles/<bundle>/manifest/revision.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { opaConfigFile } from '../../src/standalone/index.ts';
import { opaJson, runOpa, type RunningOpa } from '../../test/support/opa.ts';
import { startTestService, type TestService } from '../../test/support/service.ts';
import { connectorManifest } from '../http/tenant.ts';
import { onCleanup, removeAtExit } from './cleanup.ts';

const TENANT = 'acme';
const CONNECTOR = 'sidecars';
const BUNDLE = 'everything';
export const BUNDLE_KEY = `${TENANT}/${BUNDLE}`;
const REVISION_PATH = `/v1/data/system/bundles/${BUNDLE}/manifest/revision`;
/** Longest pause between two revision queries to one OPA; shorter early on (see `answered`). */
export const MAX_PROBE_GAP_MS = 20;
/** The production default of --max-long-poll-seconds (startTestService would hold 30 s). */
const MAX_LONG_POLL_SECONDS = 120;

const RULE = (actions: readonly string[]): string => `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: team-documents, namespace: ${TENANT} }
spec:
  state: Enforced
  subjectType: user
  actions: [${actions.join(', ')}]
  resourceType: document
  condition: principal.team == resource.team
`;
const MANIFESTS: Record<string, string> = {
  'connectors.yaml': connectorManifest(TENANT, CONNECTOR, BUNDLE),
  'rules.yaml': RULE(['read']),
};

/** The parts of the generated configuration a fleet may change; everything else passes through as it is. */
const Polling = z.looseObject({
  min_delay_seconds: z.number().optional(),
  max_delay_seconds: z.number().optional(),
  long_polling_timeout_seconds: z.number().optional(),
});
export const OpaConfig = z.looseObject({ bundles: z.record(z.string(), z.looseObject({ polling: Polling.optional() })) });
export type OpaConfig = z.infer<typeof OpaConfig>;
export type Polling = z.infer<typeof Polling>;

/** The configuration with every bundle's `polling` replaced. */
export function withPolling(config: OpaConfig, polling: Polling): OpaConfig {
  return { ...config, bundles: Object.fromEntries(Object.entries(config.bundles).map(([name, b]) => [name, { ...b, polling }])) };
}

const RevisionAnswer = z.object({ result: z.string().optional() });

export interface FleetOptions {
  readonly opaBin: string;
  readonly agents: number;
  /** Part of the temporary folders' names. */
  readonly label: string;
  /** The configuration every OPA runs, made from the generated one. */
  readonly configure: (generated: OpaConfig) => OpaConfig;
  /** The OPAs hold long polls: the fleet is ready for an edit once every one of them holds one again. */
  readonly longPolling: boolean;
  /** Longest an edit may take to reach every OPA before the run fails. */
  readonly editTimeoutMs: number;
}

export interface EditTiming {
  readonly revision: string;
  /** From the manifest write starting to the service's publish (folder re-read, compile, build). */
  readonly publishMs: number;
  /** From publish to the end of the service's own store listeners (answering the held long polls among them). */
  readonly listenersMs: number;
  /** From publish until every agent had reported the revision active. */
  readonly reportedMs: number;
  /** From publish until every OPA answered with the revision. */
  readonly answeredMs: number;
  /** From publish until each agent's report of it (one per agent). */
  readonly perAgentMs: readonly number[];
}

/** Cumulative service counters, read from the ops listener's /metrics. */
export interface Counters {
  readonly propagationCount: number;
  readonly propagationSumS: number;
  /** Observations of acl_bundle_propagation_seconds at or below 1 s. */
  readonly propagationUnder1s: number;
  readonly statusReports: number;
  readonly bundleRequests: number;
}

/** The edit under way: its revision, and what to do once the service publishes it. */
interface PendingEdit {
  readonly revision: string;
  publishedAt: number | undefined;
  listenersMs: number;
  readonly onPublished: (at: number) => void;
}

export interface Fleet {
  /** Waits for the fleet to be ready and then `gapMs`, edits the rule, and times its propagation. */
  edit(gapMs: number): Promise<EditTiming>;
  counters(): Promise<Counters>;
  /** Stops the OPAs (each sends its last status report), then the service; removes the folders. */
  stop(): Promise<void>;
}

/** Fails with the output of an OPA that ended, or of the first OPA when the deadline passes. */
async function until<T>(
  opas: readonly RunningOpa[],
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const ended = opas.find((o) => o.ended() !== undefined);
    if (ended) throw new Error(`OPA at ${ended.url} ${ended.ended()} while we waited for ${what}:\n${ended.output()}`);
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; first OPA (${opas[0]?.url}):\n${opas[0]?.output()}`);
    }
    await sleep(20);
  }
}

/** The revision an OPA answers with (undefined before its first activation or when it does not answer). */
async function revisionOf(opa: RunningOpa): Promise<string | undefined> {
  const answer = await opaJson(opa, REVISION_PATH).catch(() => undefined);
  return RevisionAnswer.safeParse(answer?.body).data?.result;
}

/**
 * Asks one OPA for its revision until it answers `revision`; returns the time of that answer after
 * `fromMs`. The pause between queries grows with the time elapsed (2% of it, 1-20 ms), so a fast
 * propagation is timed to about a millisecond and a slow one does not load the OPA for nothing.
 */
async function answered(opa: RunningOpa, revision: string, fromMs: number, deadlineMs: number): Promise<number> {
  for (;;) {
    const got = await revisionOf(opa);
    const at = performance.now();
    if (got === revision) return at - fromMs;
    if (opa.ended() !== undefined)
      throw new Error(`OPA at ${opa.url} ${opa.ended()} before answering revision ${revision}:\n${opa.output()}`);
    if (at > deadlineMs) throw new Error(`OPA at ${opa.url} answered revision ${got}, not ${revision}, at the deadline:\n${opa.output()}`);
    await sleep(Math.min(MAX_PROBE_GAP_MS, Math.max(1, (at - fromMs) / 50)));
  }
}

export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const opas: RunningOpa[] = [];
  const dirs: string[] = [];
  let service: TestService | undefined;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      await Promise.all(opas.map((x) => x.stop()));
      await service?.stop();
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    })();
    return stopped;
  };
  onCleanup(stop);

  const t = await startTestService({ manifests: MANIFESTS, maxLongPollSeconds: MAX_LONG_POLL_SECONDS });
  service = t;
  removeAtExit(dirname(t.manifests));
  const registry = t.service.fleet.agents;
  const generated = OpaConfig.parse(parse(await readFile(opaConfigFile(t.stateDir, TENANT, BUNDLE), 'utf8')));
  const config = stringify(o.configure(generated));
  for (let i = 0; i < o.agents; i++) {
    const dir = await mkdtemp(join(tmpdir(), `acl-bench-propagation-${o.label}-`));
    dirs.push(dir);
    removeAtExit(dir);
    await writeFile(join(dir, 'opa.yaml'), config);
  }
  // Each OPA's own folder is its working directory, so its persisted bundle (persist: true) is its own.
  await Promise.all(
    dirs.map(async (dir) => {
      opas.push(await runOpa(o.opaBin, join(dir, 'opa.yaml'), dir));
    }),
  );

  const servedRevision = (): string => String(t.service.store.snapshot().tenants.get(TENANT)?.bundles.get(BUNDLE)?.built.revision);
  const allReport = (revision: string): boolean => {
    const agents = registry.agents(TENANT, BUNDLE, Date.now());
    return agents.length >= o.agents && agents.every((a) => a.activeRevision === revision);
  };
  const first = servedRevision();
  await until(opas, `all ${o.agents} agents to report revision ${first} and every OPA to answer it`, 120_000, async () => {
    if (!allReport(first)) return undefined;
    return (await Promise.all(opas.map(revisionOf))).every((r) => r === first) ? true : undefined;
  });

  // The service publishes when its controller calls store.publish(): the store's listeners run inside
  // that call, ours last, after the service's own, which answer the held long polls (a millisecond or
  // two with a few OPAs, 5-12 ms with ten on a busy 2-core machine). So a publish is timed where the
  // call starts, as acl_bundle_propagation_seconds is (the service's first listener takes the time);
  // freezing the draft before the listeners takes microseconds with one rule.
  const store = t.service.store;
  const publish = store.publish.bind(store);
  let publishCalledAt = 0;
  store.publish = function timedPublish() {
    publishCalledAt = performance.now();
    return publish();
  };

  let pending: PendingEdit | undefined;
  store.onBundleChange((changed, snapshot) => {
    const at = publishCalledAt;
    if (pending === undefined || pending.publishedAt !== undefined) return;
    if (!changed.some((b) => b.tenant === TENANT && b.name === BUNDLE)) return;
    if (String(snapshot.tenants.get(TENANT)?.bundles.get(BUNDLE)?.built.revision) !== pending.revision) return;
    pending.publishedAt = at;
    pending.listenersMs = performance.now() - at;
    pending.onPublished(at);
  });

  /** Resolves when the registry announces the report that leaves every agent on `revision`. */
  const reported = (revision: string, deadlineMs: number): Promise<{ allMs: number; perAgentMs: number[] }> =>
    new Promise((resolve, reject) => {
      const perAgent = new Map<string, number>();
      const check = (): void => {
        const from = pending?.publishedAt;
        if (from === undefined) return;
        const at = performance.now();
        const agents = registry.agents(TENANT, BUNDLE, Date.now());
        for (const a of agents) if (a.activeRevision === revision && !perAgent.has(a.id)) perAgent.set(a.id, at - from);
        if (agents.length >= o.agents && agents.every((a) => a.activeRevision === revision)) {
          done();
          resolve({ allMs: at - from, perAgentMs: [...perAgent.values()] });
        }
      };
      const unsubscribe = registry.onChange((tenant, bundle) => {
        if (tenant === TENANT && bundle === BUNDLE) check();
      });
      const timer = setTimeout(
        () => {
          done();
          const agents = registry.agents(TENANT, BUNDLE, Date.now()).map((a) => `${a.id}: ${a.activeRevision ?? 'none'}`);
          const known = `${agents.length} of ${o.agents} known: ${agents.join(', ')}`;
          reject(new Error(`not every agent reported revision ${revision} active in time (${known})`));
        },
        Math.max(0, deadlineMs - performance.now()),
      );
      const done = (): void => {
        unsubscribe();
        clearTimeout(timer);
      };
    });

  let edits = 0;
  return {
    async edit(gapMs) {
      if (o.longPolling) {
        const held = (): true | undefined => (t.service.longPolls.size() >= o.agents ? true : undefined);
        await until(opas, `all ${o.agents} OPAs to hold a long poll`, 30_000, held);
      }
      await sleep(gapMs);
      edits += 1;
      const revision = String(Number(servedRevision()) + 1);
      const deadline = performance.now() + o.editTimeoutMs;
      const published = new Promise<number>((resolve) => {
        pending = { revision, publishedAt: undefined, listenersMs: NaN, onPublished: resolve };
      });
      const agents = reported(revision, deadline);
      // Started from the store's listener, so the queries begin at the publish itself.
      const answers = published.then((at) => Promise.all(opas.map((opa) => answered(opa, revision, at, deadline))));
      // Awaited below; until then a failure must not count as unhandled.
      agents.catch(() => undefined);
      answers.catch(() => undefined);
      const writeAt = performance.now();
      await t.write('rules.yaml', RULE(['read', `edit-${edits}`]));
      const edit = pending;
      if (edit?.publishedAt === undefined) throw new Error(`the edit did not publish revision ${revision} (serving ${servedRevision()})`);
      const [a, perOpa] = await Promise.all([agents, answers]);
      pending = undefined;
      return {
        revision,
        publishMs: edit.publishedAt - writeAt,
        listenersMs: edit.listenersMs,
        reportedMs: a.allMs,
        answeredMs: Math.max(...perOpa),
        perAgentMs: a.perAgentMs,
      };
    },
    async counters() {
      const text = await (await t.ops('/metrics')).text();
      const sum = (pattern: RegExp): number => [...text.matchAll(pattern)].reduce((s, m) => s + Number(m[1]), 0);
      return {
        propagationCount: sum(/^acl_bundle_propagation_seconds_count (\S+)$/gm),
        propagationSumS: sum(/^acl_bundle_propagation_seconds_sum (\S+)$/gm),
        propagationUnder1s: sum(/^acl_bundle_propagation_seconds_bucket\{le="1"\} (\S+)$/gm),
        statusReports: sum(/^acl_agent_status_reports_total\{[^}]*\} (\S+)$/gm),
        bundleRequests: sum(/^acl_bundle_requests_total\{[^}]*\} (\S+)$/gm),
      };
    },
    stop,
  };
}
