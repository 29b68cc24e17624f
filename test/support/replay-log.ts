// Records the decision log the replay proof replays: the standalone service with --decision-log
// <file> on the folder of replay-traffic.ts, one real OPA per acme bundle started from the state
// folder's printed configuration (decision logs uploaded to the service), every generated request
// sent (concurrently, over keep-alive connections), then a wait until the log holds every line.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { opaConfigFile } from '../../src/standalone/index.ts';
import { opaJson, runOpa, waitForOpa, type RunningOpa } from './opa.ts';
import { ACME_KEY, BUNDLES, GLOBEX_KEY, manifestsOf, type BundleName, type Input, type Request } from './replay-traffic.ts';
import { startTestService, type TestService } from './service.ts';

/** OPA queries of another path than acl/allow, sent to the `everything` OPA: logged, and not decisions. */
export const OTHER_PATH_QUERIES = 5;
const BATCH = 50;
const PARALLEL = 16;

export interface Recording {
  /** The decision log, complete (service and OPAs stopped). */
  readonly file: string;
  /** Lines recorded per source, and per endpoint or bundle. */
  readonly perSource: Readonly<Record<string, number>>;
  readonly lines: number;
  /** OPA's version, as `opa version` prints it in uploads (agentVersion). */
  readonly sendMs: number;
  readonly waitMs: number;
}

const bodyEntity = (e: Input['principal'] | Input['resource']): Record<string, unknown> => {
  const { type, id, ...properties } = e;
  return { type, id, properties };
};
const authzenItem = (i: Input): Record<string, unknown> => ({
  subject: bodyEntity(i.principal),
  action: { name: i.action },
  resource: bodyEntity(i.resource),
  context: {},
});

/** Runs `work` over `items` with PARALLEL workers. */
async function pool<T>(items: readonly T[], work: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

async function post(url: string, key: string | undefined, body: unknown): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(key === undefined ? {} : { Authorization: `Bearer ${key}` }) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST ${url}: ${res.status} ${text}`);
  return JSON.parse(text) as unknown;
}

/** Sends every request where its route says; checks each answer against `expected` (the model). */
async function send(
  service: TestService,
  opas: ReadonlyMap<BundleName, RunningOpa>,
  requests: readonly Request[],
  expected: (r: Request) => boolean,
): Promise<void> {
  const keyOf = (r: Request): string => (r.tenant === 'acme' ? ACME_KEY : GLOBEX_KEY);
  const check = (r: Request, got: unknown): void => {
    if (got !== expected(r))
      throw new Error(`${r.route} answered ${String(got)} for ${JSON.stringify(r.input)}, the model says ${expected(r)}`);
  };
  const single = requests.filter((r) => r.route !== 'evaluations');
  const batches: Request[][] = [];
  for (const tenant of ['acme', 'globex'] as const) {
    const items = requests.filter((r) => r.route === 'evaluations' && r.tenant === tenant);
    for (let i = 0; i < items.length; i += BATCH) batches.push(items.slice(i, i + BATCH));
  }
  await pool([...single.map((r) => [r]), ...batches], async (group) => {
    const r = group[0] as Request;
    if (r.route === 'authorization') {
      const { principal, action, resource } = r.input;
      const body = { subject: bodyEntity(principal), action, resource: bodyEntity(resource), context: {} };
      check(r, ((await post(`${service.url}/authorization`, keyOf(r), body)) as { decision: string }).decision === 'allow');
    } else if (r.route === 'evaluation') {
      check(r, ((await post(`${service.url}/access/v1/evaluation`, keyOf(r), authzenItem(r.input))) as { decision: boolean }).decision);
    } else if (r.route === 'evaluations') {
      const answer = (await post(`${service.url}/access/v1/evaluations`, keyOf(r), {
        evaluations: group.map((g) => authzenItem(g.input)),
      })) as {
        evaluations: { decision: boolean }[];
      };
      for (const [k, g] of group.entries()) check(g, answer.evaluations[k]?.decision);
    } else {
      // As a sidecar's caller asks: the flat input, context given, actionProperties left out.
      const opa = opas.get(r.route) as RunningOpa;
      check(
        r,
        ((await post(`${opa.url}/v1/data/acl/allow`, undefined, { input: { ...r.input, context: {} } })) as { result: unknown }).result,
      );
    }
  });
}

/** Counts of the log's lines by source (service: by endpoint; opa: by bundle). */
export async function countLines(file: string): Promise<Record<string, number>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const counts: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const l = JSON.parse(line) as { source: string; endpoint?: string; bundle?: string; path?: string };
    const key = l.source === 'service' ? `service/${l.endpoint}` : `opa/${l.bundle}/${l.path}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Records the log into `file` (in `dir`, which also holds the OPAs' folders). */
export async function record(
  opaBin: string,
  dir: string,
  requests: readonly Request[],
  expected: (r: Request) => boolean,
): Promise<Recording> {
  const file = join(dir, 'decisions.log');
  const service = await startTestService({
    manifests: manifestsOf('live'),
    config: { decisionLog: { kind: 'file', path: file } },
    serviceOptions: { agentStatusIntervalMs: 200 },
  });
  const opas = new Map<BundleName, RunningOpa>();
  try {
    for (const bundle of BUNDLES) {
      // The configuration serve printed for the bundle (signed: keyid pinned), as it is.
      const opa = await runOpa(opaBin, opaConfigFile(service.stateDir, 'acme', bundle), dir);
      opas.set(bundle, opa);
    }
    for (const [bundle, opa] of opas)
      await waitForOpa(opa, `OPA on ${bundle} to activate it`, 30_000, async () =>
        (await opaJson(opa, '/health?bundles')).status === 200 ? true : undefined,
      );
    const started = performance.now();
    await send(service, opas, requests, expected);
    const everything = opas.get('everything') as RunningOpa;
    for (let i = 0; i < OTHER_PATH_QUERIES; i++)
      await post(`${everything.url}/v1/data/acl/nothing`, undefined, { input: requests[i]?.input });
    const sendMs = performance.now() - started;
    const want: Record<string, number> = {};
    for (const r of requests) {
      const key = r.route === 'everything' || r.route === 'documents' ? `opa/${r.route}/acl/allow` : `service/${r.route}`;
      want[key] = (want[key] ?? 0) + 1;
    }
    want['opa/everything/acl/nothing'] = OTHER_PATH_QUERIES;
    // OPA uploads every 5 to 10 s (the printed configuration): wait until every line is there.
    let last: Record<string, number> = {};
    const perSource = await waitForOpa(
      everything,
      'every decision in the decision log',
      60_000,
      async () => {
        const got = await countLines(file);
        last = got;
        return Object.entries(want).every(([k, n]) => got[k] === n) ? got : undefined;
      },
      () => `want ${JSON.stringify(want)}, got ${JSON.stringify(last)}\nOPA on documents:\n${opas.get('documents')?.output()}`,
    );
    const waitMs = performance.now() - started - sendMs;
    return { file, perSource, lines: Object.values(perSource).reduce((a, b) => a + b, 0), sendMs, waitMs };
  } finally {
    await Promise.all([...opas.values()].map((o) => o.stop()));
    await service.stop();
  }
}
