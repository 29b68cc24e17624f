// The real service as bench/http/servers/service.ts starts it (standalone, plain HTTP, the generated
// tenant), with what an OPA fleet changes set by flags: the decision log, the background timers and
// the log level. bench/fleet.ts measures what a fleet costs with it; bench/http.ts measures
// decisions with `--decision-log file` against the `decide` variant, whose process differs only there.
//   node bench/http/servers/fleet-service.ts --rules 10 --decision-log file --timers off --log-level silent
//   --decision-log off|file|null   file: <temp folder>/decisions.log, named in the ready message;
//                             null: /dev/null (every line made and written, none stored)
//   --timers default|off      off: as service.ts, no activity flush or folder re-read during a run;
//                             default: as `acl-operator serve` runs (agents and recent decisions
//                             written out every 5 s, the folder watched)
//   --log-level silent|info   info: the service's own log, to <temp folder>/service.log
//   --proposed N              N Proposed rules (shadow decisions, bench/shadow.ts), a tenth of them
//                             over the types and actions the requests use (tenantProposal)
//   --proposed-in bench|other the tenant that holds them: the one decided, or another one
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { configFromFlags } from '../../../src/config.ts';
import { LOCAL_LISTENERS } from '../../../test/support/service.ts';
import { startService, type ServiceOptions } from '../../../src/modes/index.ts';
import { serveCommands } from '../ipc.ts';
import { BUNDLE, CONNECTOR, manifestFiles, proposalManifest, TENANT, tenantRules } from '../tenant.ts';
import { startProfile, stopProfile } from './profiler.ts';
import { collectGarbage, processStats, type ServerCommands } from './stats.ts';

export interface FleetServiceReady {
  readonly port: number;
  /** The connector token, as service.ts reads it. */
  readonly token: string;
  /** The revision the bundle serves, as OPA reports it active (`active_revision`). */
  readonly revision: string;
  /** The decision log file, when --decision-log file. */
  readonly decisionLog: string | undefined;
  /** The service's own log file, when --log-level info. */
  readonly serviceLog: string | undefined;
}

/** What the service counted, from its own metrics (acl_*_total and the acl_agents gauge). */
export interface FleetCounters {
  readonly reportsAccepted: number;
  readonly uploadsAccepted: number;
  /** Refused or failed uploads and reports, by outcome. */
  readonly refused: Readonly<Record<string, number>>;
  readonly decisionLogLines: number;
  readonly decisionLogDropped: number;
  readonly agents: { readonly current: number; readonly behind: number; readonly failing: number };
}

/** How late the event loop ran its timers, as the service's own acl_nodejs_eventloop_lag_* gauges report it (10 ms resolution). */
export interface LoopDelay {
  readonly p99Ms: number;
  readonly maxMs: number;
}

export type FleetServiceCommands = ServerCommands & {
  counters: { arg: null; result: FleetCounters };
  /** The event loop's delay since the last call (the call starts a new period). */
  loopDelay: { arg: null; result: LoopDelay };
};

const { values } = parseArgs({
  options: {
    rules: { type: 'string', default: '10' },
    'decision-log': { type: 'string', default: 'off' },
    timers: { type: 'string', default: 'default' },
    'log-level': { type: 'string', default: 'silent' },
    proposed: { type: 'string', default: '0' },
    'proposed-in': { type: 'string', default: TENANT },
  },
});
const choice = <T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T => {
  if (!allowed.includes(value as T)) throw new Error(`--${flag} must be one of ${allowed.join(', ')}, got ${value}`);
  return value as T;
};
const logTo = choice('decision-log', values['decision-log'], ['off', 'file', 'null'] as const);
const timers = choice('timers', values.timers, ['default', 'off'] as const);
const logLevel = choice('log-level', values['log-level'], ['silent', 'info'] as const);
const proposedIn = choice('proposed-in', values['proposed-in'], [TENANT, 'other'] as const);

const root = await mkdtemp(join(tmpdir(), 'acl-bench-fleet-'));
const manifests = join(root, 'manifests');
await mkdir(manifests, { recursive: true });
const live = tenantRules(Number(values.rules));
for (const [file, text] of Object.entries(manifestFiles(live))) await writeFile(join(manifests, file), text);
if (Number(values.proposed) > 0)
  await writeFile(join(manifests, 'proposal.yaml'), proposalManifest(live, Number(values.proposed), proposedIn));
const decisionLog = logTo === 'file' ? join(root, 'decisions.log') : logTo === 'null' ? '/dev/null' : undefined;
const serviceLog = logLevel === 'info' ? join(root, 'service.log') : undefined;

const config = configFromFlags([
  '--manifests',
  manifests,
  '--state-dir',
  join(root, 'state'),
  ...LOCAL_LISTENERS,
  '--log-level',
  logLevel,
  ...(decisionLog === undefined ? [] : ['--decision-log', decisionLog]),
]);
const log =
  serviceLog === undefined ? pino({ level: 'silent' }) : pino({ level: 'info' }, pino.destination({ dest: serviceLog, sync: false }));
const quiet: ServiceOptions = timers === 'off' ? { activityFlushMs: 3_600_000, debounceMs: 3_600_000 } : {};
const service = await startService(config, { log, ...quiet });

const bundle = service.store.snapshot().tenants.get(TENANT)?.bundles.get(BUNDLE);
if (!bundle) throw new Error(`the service serves no bundle ${TENANT}/${BUNDLE}`);
const ready: FleetServiceReady = {
  port: Number(new URL(service.apiUrl).port),
  token: (await readFile(service.state.tokenFile(TENANT, CONNECTOR), 'utf8')).trim(),
  revision: String(bundle.built.revision),
  decisionLog,
  serviceLog,
};

interface MetricValues {
  readonly values: readonly { readonly value: number; readonly labels: Readonly<Record<string, string | number | undefined>> }[];
}

/** Sum of a metric's values whose labels match `where`. */
async function sumOf(metric: { get(): Promise<MetricValues> }, where: Readonly<Record<string, string>> = {}): Promise<number> {
  const { values: vs } = await metric.get();
  return vs.filter((v) => Object.entries(where).every(([k, want]) => String(v.labels[k]) === want)).reduce((n, v) => n + v.value, 0);
}

async function counters(): Promise<FleetCounters> {
  const m = service.metrics;
  const refused: Record<string, number> = {};
  for (const [name, metric] of [
    ['report', m.agentReports],
    ['upload', m.decisionLogUploads],
  ] as const) {
    for (const v of (await metric.get()).values) {
      if (v.labels.outcome !== 'accepted' && v.value > 0) refused[`${name} ${String(v.labels.outcome)}`] = v.value;
    }
  }
  const gauge = (state: string): Promise<number> => sumOf(m.agents, { tenant: TENANT, bundle: BUNDLE, state });
  return {
    reportsAccepted: await sumOf(m.agentReports, { outcome: 'accepted' }),
    uploadsAccepted: await sumOf(m.decisionLogUploads, { outcome: 'accepted' }),
    refused,
    decisionLogLines: await sumOf(m.decisionLogLines),
    decisionLogDropped: await sumOf(m.decisionLogDropped),
    agents: { current: await gauge('current'), behind: await gauge('behind'), failing: await gauge('failing') },
  };
}

/**
 * prom-client's event loop monitor (collectDefaultMetrics) sets its gauges and starts over each time
 * acl_nodejs_eventloop_lag_seconds is collected; nothing else collects it here (no scrape).
 */
async function loopDelay(): Promise<LoopDelay> {
  const registry = service.metrics.registry;
  await registry.getSingleMetric('acl_nodejs_eventloop_lag_seconds')?.get();
  const seconds = async (name: string): Promise<number> => (await registry.getSingleMetric(name)?.get())?.values[0]?.value ?? NaN;
  return {
    p99Ms: 1000 * (await seconds('acl_nodejs_eventloop_lag_p99_seconds')),
    maxMs: 1000 * (await seconds('acl_nodejs_eventloop_lag_max_seconds')),
  };
}

serveCommands<FleetServiceCommands>(
  {
    stats: () => processStats(service.longPolls.size()),
    gcStats: () => {
      collectGarbage();
      return processStats(service.longPolls.size());
    },
    startProfile,
    stopProfile,
    counters,
    loopDelay,
  },
  ready,
  async () => {
    await service.stop();
    await rm(root, { recursive: true, force: true });
  },
);
