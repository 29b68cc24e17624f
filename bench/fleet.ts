// OPA fleet benchmark (not part of make bench): what 1,000 OPA agents cost the service. Each agent
// sends its status report (OPA 1.1's, about 47 KB) every 10 s and uploads a gzip batch of 100
// decisions every 10 s, on its own keep-alive connection: 100 reports/s and 100 uploads/s, 10,000
// decisions/s. The service runs as `acl-operator serve --insecure-http` runs it (standalone, default
// timers, its log at info to a file), each configuration in its own process pinned to core 0; the
// agents are one process pinned to core 1. Server CPU comes from /proc over a measured window, for
// four processes: idle (the baseline: the same service with no agent, over windows of the same
// length, in the same run), reports only, reports and uploads with the decision log off, and with
// `--decision-log` to a file; and two floors in the same run: raw node:http taking the same
// uploads and only reading them, or also gunzipping and parsing them (bench/http/servers/fleet-floor.ts),
// which no receiver can do without. While one is measured the others are paused (SIGSTOP), as in
// bench/http.ts. Rounds rotate the order; figures are medians of the rounds and costs above idle
// are medians of the per-round differences. Not a test: a missed target prints MISS, exit code 0.
//   node bench/fleet.ts                    3 rounds × 60 s windows per row (about 16 minutes)
//   BENCH_QUICK=1 node bench/fleet.ts      2 rounds × 15 s windows (about 3 minutes): a smoke check
//   BENCH_ROUNDS=5 BENCH_WINDOW_S=120 ...  other rounds or window lengths
//   node bench/fleet/profile.ts fleet      where the server's time goes under this load
import { fileURLToPath } from 'node:url';
import type { AgentCommands, FleetFigures, Kind } from './fleet/agents.ts';
import { createRunner, loadProblems, type Row, type Sample, type Server } from './fleet/rows.ts';
import { LOADGEN_CORE, pinToLoadCore, SERVER_CORE } from './http/cores.ts';
import { spawnPinned } from './http/ipc.ts';
import { fmt, kb, machine, table, targetLines, type Target } from './http/report.ts';
import { median } from './http/rounds.ts';
import type { FleetCounters, FleetServiceCommands, FleetServiceReady } from './http/servers/fleet-service.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const ROUNDS = Number(process.env['BENCH_ROUNDS']) || (QUICK ? 2 : 3);
const WINDOW_S = Number(process.env['BENCH_WINDOW_S']) || (QUICK ? 15 : 60);
/** Load before each measured window: one full period, so every agent has reported since the server resumed. */
const SETTLE_S = QUICK ? 5 : 10;
const WARMUP_S = QUICK ? 5 : 20;
const AGENTS = 1_000;
const PERIOD_S = 10;
const EVENTS = 100;
/** Agents' requests per second of each kind. */
const RATE = AGENTS / PERIOD_S;
const TARGET_ABOVE_IDLE = 0.05;
/** Our own: the service's work on top of receiving and parsing what OPA sends stays under half the floor. */
const FLOOR_RATIO_TARGET = 1.5;
/** Above this, another process took a noticeable share of a core during a window. */
const OTHER_LOAD_WARN = 0.05;

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const pct = (share: number, digits = 1): string => `${fmt(share * 100, digits)}%`;
const script = (name: string): string => fileURLToPath(new URL(name, import.meta.url));

console.log(
  `acl-operator OPA fleet benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);
pinToLoadCore('the server and the agents');

const startServer = (decisionLog: 'off' | 'file'): Promise<Server> =>
  spawnPinned<FleetServiceCommands, FleetServiceReady>(SERVER_CORE, script('./http/servers/fleet-service.ts'), [
    '--rules',
    '10',
    '--decision-log',
    decisionLog,
    '--log-level',
    'info',
  ]);
const startFloor = (work: 'read' | 'parse'): Promise<Server> =>
  spawnPinned<FleetServiceCommands, FleetServiceReady>(SERVER_CORE, script('./http/servers/fleet-floor.ts'), ['--work', work]);
const [agents, idle, reports, fleet, fleetLog, floorRead, floorParse] = await Promise.all([
  spawnPinned<AgentCommands, unknown>(LOADGEN_CORE, script('./fleet/agents.ts')),
  startServer('off'),
  startServer('off'),
  startServer('off'),
  startServer('file'),
  startFloor('read'),
  startFloor('parse'),
]);
const rows: Row[] = [
  { key: 'idle', label: 'idle (no agent)', server: idle, load: 'none' },
  { key: 'reports', label: 'status reports only', server: reports, load: 'reports' },
  { key: 'fleet', label: 'reports + uploads, decision log off', server: fleet, load: 'uploads' },
  { key: 'fleetLog', label: 'reports + uploads, --decision-log file', server: fleetLog, load: 'uploads' },
  { key: 'floorRead', label: 'floor: node:http reading them', server: floorRead, load: 'uploads' },
  { key: 'floorParse', label: 'floor: node:http + gunzip + JSON.parse', server: floorParse, load: 'uploads' },
];
const loadedRows = rows.filter((r) => r.load !== 'none');

progress(`building ${fmt(AGENTS)} agents' requests for each loaded server`);
let sizes = { statusBodyBytes: 0, logsBodyBytes: 0, logsJsonBytes: 0 };
for (const { key, server } of loadedRows) {
  sizes = await agents.call('prepare', { key, agents: AGENTS, token: server.ready.token, revision: server.ready.revision, events: EVENTS });
}
console.log(
  `fleet: ${fmt(AGENTS)} agents, each on its own keep-alive connection: a status report every ${PERIOD_S} s ` +
    `(${kb(sizes.statusBodyBytes)} of JSON), a decision-log upload every ${PERIOD_S} s (${EVENTS} decisions, ${kb(sizes.logsBodyBytes)} gzip, ` +
    `${kb(sizes.logsJsonBytes)} of JSON): ${fmt(RATE)} reports/s, ${fmt(RATE)} uploads/s, ${fmt(RATE * EVENTS)} decisions/s`,
);
console.log(
  `service: standalone, plain HTTP, 10 rules, default timers, log at info to a file; ` +
    `one process per row on core ${SERVER_CORE}, agents on core ${LOADGEN_CORE}`,
);

const runner = createRunner({ rows, agents, periodS: PERIOD_S, settleS: SETTLE_S, windowS: WINDOW_S });
const answered200 = (f: FleetFigures): number => (f.status.statusCodes['200'] ?? 0) + (f.logs.statusCodes['200'] ?? 0);
const sent = (f: FleetFigures): number => f.status.sent + f.logs.sent;

progress(`warming up: ${WARMUP_S} s of load per loaded server`);
for (const row of loadedRows) await runner.warm(row, WARMUP_S);

const samples = new Map<string, Sample[]>(rows.map((r) => [r.key, []]));
let warned = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[(i + round) % rows.length] as Row;
    const s = await runner.measure(row);
    samples.get(row.key)?.push(s);
    const w = s.window;
    const rates = w
      ? `  reports ${fmt(w.status.answered / w.durationS, 1)}/s  uploads ${fmt(w.logs.answered / w.durationS, 1)}/s` +
        `  upload p99 ${fmt(w.logs.p99Ms, 2)} ms  agents ${pct(s.loadgenCpu, 0)}`
      : '';
    progress(
      `  round ${round + 1}/${ROUNDS}  ${row.label.padEnd(38)} server ${pct(s.cpu, 2).padStart(6)} of a core${rates}` +
        `  other load ${pct(s.otherLoad.serverCore)}/${pct(s.otherLoad.loadCore)}`,
    );
    const problems = loadProblems(row, s, RATE);
    if (problems.length > 0) {
      warned++;
      console.log(
        `WARNING the load was not sent as scheduled (${row.label}, round ${round + 1}): ${problems.join('; ')} ` +
          `(the agents' process used ${pct(s.loadgenCpu, 0)} of core ${LOADGEN_CORE}, other processes ${pct(s.otherLoad.loadCore, 0)})`,
      );
    }
    const t = s.total;
    if (t && (answered200(t) !== sent(t) || t.errors > 0)) {
      console.log(
        `WARNING ${row.label}, round ${round + 1}: ${fmt(answered200(t))} of ${fmt(sent(t))} requests answered 200 ` +
          `(${JSON.stringify({ status: t.status.statusCodes, logs: t.logs.statusCodes })}${t.errors ? `, ${t.errors} connection errors` : ''})`,
      );
    }
  }
}
await Promise.all([agents.stop(), ...rows.map((r) => r.server.stop())]);

const of = (key: string): Sample[] => samples.get(key) ?? [];
const all = [...samples.values()].flat();
const med = (key: string, f: (s: Sample) => number): number => median(of(key).map(f));
/** Median over rounds of f(row's sample) − f(base's sample) of the same round. */
const diff = (key: string, base: string, f: (s: Sample) => number): number =>
  median(of(key).map((s, i) => f(s) - f(of(base)[i] as Sample)));
const cpuOf = (s: Sample): number => s.cpu;
const rateOf =
  (k: Kind) =>
  (s: Sample): number =>
    s.window ? s.window[k].answered / s.window.durationS : 0;
const p99Of =
  (k: Kind) =>
  (s: Sample): number =>
    s.window?.[k].p99Ms ?? NaN;
const latency = (key: string, k: Kind): string =>
  `${fmt(
    med(key, (s) => s.window?.[k].p50Ms ?? NaN),
    1,
  )} / ${fmt(med(key, p99Of(k)), 1)} ms`;
const allSent = (key: string): number => of(key).reduce((n, s) => n + (s.total ? sent(s.total) : 0), 0);
const all200 = (key: string): number => of(key).reduce((n, s) => n + (s.total ? answered200(s.total) : 0), 0);
const uploads = (r: Row): boolean => r.load === 'uploads';

console.log('');
console.log(
  `Server CPU over ${WINDOW_S} s windows, ${ROUNDS} rounds, as a share of one core (medians; above idle: the median of per-round differences)`,
);
for (const line of table(
  ['row', 'server CPU', 'above idle', 'kernel', 'JS thread', 'other load'],
  rows.map((r) => [
    r.label,
    pct(med(r.key, cpuOf), 2),
    r.key === 'idle' ? '' : pct(diff(r.key, 'idle', cpuOf), 2),
    pct(
      med(r.key, (s) => s.system),
      2,
    ),
    pct(
      med(r.key, (s) => s.mainThread),
      2,
    ),
    `${pct(med(r.key, (s) => s.otherLoad.serverCore))}/${pct(med(r.key, (s) => s.otherLoad.loadCore))}`,
  ]),
))
  console.log(`  ${line}`);
console.log("  (server CPU: the service process's user + system time, all threads; kernel: its system time; JS thread: its main thread's");
console.log("   time, the rest being V8's GC helpers and libuv's pool (gunzip, file writes); other load: CPU other processes took on");
console.log(`   core ${SERVER_CORE} / core ${LOADGEN_CORE})`);
console.log('');
console.log(
  `The load over the same windows (answered 200: every request of the runs, ${SETTLE_S} s settle + window; latency from the write`,
);
console.log(`of a request to its response)`);
const loadColumns = [
  'row',
  'reports/s',
  'uploads/s',
  'decisions/s',
  'answered 200',
  'report p50 / p99',
  'upload p50 / p99',
  'loop delay p99 / max',
  'agents core',
];
for (const line of table(
  loadColumns,
  rows.map((r) => [
    r.label,
    r.load === 'none' ? '' : fmt(med(r.key, rateOf('status')), 1),
    uploads(r) ? fmt(med(r.key, rateOf('logs')), 1) : '',
    uploads(r) ? fmt(med(r.key, rateOf('logs')) * EVENTS) : '',
    r.load === 'none' ? '' : `${fmt(all200(r.key))} of ${fmt(allSent(r.key))}`,
    r.load === 'none' ? '' : latency(r.key, 'status'),
    uploads(r) ? latency(r.key, 'logs') : '',
    `${fmt(med(r.key, (s) => s.loop.p99Ms))} / ${fmt(med(r.key, (s) => s.loop.maxMs))} ms`,
    pct(
      med(r.key, (s) => s.loadgenCpu),
      1,
    ),
  ]),
))
  console.log(`  ${line}`);
console.log("  (loop delay: how late the service's event loop ran a 10 ms timer over the window, from its own acl_nodejs_eventloop_lag_*");
console.log(`   gauges, the 10 ms included; agents core: the agents' process's share of core ${LOADGEN_CORE})`);

// Per request: the CPU above the row before, spread over the requests of the window.
const perRequestUs = (key: string, base: string, k: Kind): number =>
  median(
    of(key).map((s, i) => {
      const b = of(base)[i] as Sample;
      return ((s.cpu - b.cpu) * s.windowS * 1e6) / Math.max(1, s.window?.[k].answered ?? 0);
    }),
  );
const uploadUs = perRequestUs('fleet', 'reports', 'logs');
console.log('');
console.log(
  `Per request (CPU above the row before, over the requests of the window): a status report ${fmt(perRequestUs('reports', 'idle', 'status'))} µs; ` +
    `an upload of ${EVENTS} decisions ${fmt(uploadUs)} µs (${fmt(uploadUs / EVENTS, 1)} µs a decision); ` +
    `the decision log file adds ${fmt(perRequestUs('fleetLog', 'fleet', 'logs') / EVENTS, 1)} µs a decision`,
);
const logged = of('fleetLog').map((s) => {
  const decisions = (s.after.uploadsAccepted - s.before.uploadsAccepted) * EVENTS;
  const dropped = s.after.decisionLogDropped - s.before.decisionLogDropped;
  return `${fmt(s.logLines ?? 0)} lines for ${fmt(decisions)} decisions accepted${dropped ? ` (${fmt(dropped)} dropped)` : ''}`;
});
console.log(`Decision log file, per run: ${logged.join('; ')}`);
const last = (key: string): FleetCounters | undefined => of(key).at(-1)?.after;
console.log(
  `Agents the service counts for the bundle after the last run: ${loadedRows
    .filter((r) => !r.key.startsWith('floor'))
    .map((r) => {
      const a = last(r.key)?.agents;
      return `${r.key} ${a ? `${fmt(a.current)} current, ${fmt(a.behind)} behind, ${fmt(a.failing)} failing` : '-'}`;
    })
    .join('; ')}`,
);
const opened = all.reduce((n, s) => n + (s.total?.opened ?? 0), 0);
const errors = all.reduce((n, s) => n + (s.total?.errors ?? 0), 0);
console.log(
  `Connections: ${fmt(AGENTS)} opened at the start of each run; ${fmt(opened)} more during the runs (an agent's report and upload ` +
    `in flight together, or a connection the server closed); ${fmt(errors)} failed or closed with a request on them`,
);
const refused = rows.map((r) => last(r.key)?.refused ?? {}).filter((x) => Object.keys(x).length > 0);
if (refused.length > 0) console.log(`WARNING the service refused uploads: ${refused.map((x) => JSON.stringify(x)).join('; ')}`);

const noisy = all.filter((s) => s.otherLoad.serverCore > OTHER_LOAD_WARN || s.otherLoad.loadCore > OTHER_LOAD_WARN).length;
if (noisy > 0) {
  console.log(
    `\nWARNING other processes took more than ${pct(OTHER_LOAD_WARN, 0)} of a core in ${noisy} windows: ` +
      'the machine was not quiet, so figures from this run are suspect',
  );
}
if (warned > 0) {
  console.log(
    `WARNING the load was not sent as scheduled in ${warned} windows (see above): ` +
      'their latency is suspect, and their CPU too where requests due were not sent',
  );
} else {
  console.log('The agents kept to their schedule in every window (every request due was sent, writes at most 20 ms late at p99).');
}

const aboveIdle = diff('fleet', 'idle', cpuOf);
// The floors' own idle cost is nil (no timers, no metrics): their CPU under load is their cost.
const floorCpu = med('floorParse', cpuOf);
const floorRatio = aboveIdle / floorCpu;
console.log('');
console.log(
  `The floor (the same requests in the same run): node:http reading them costs ${pct(med('floorRead', cpuOf), 2)} of a core; ` +
    `reading, gunzipping and parsing them ${pct(floorCpu, 2)}. The service, decision log off, costs ${fmt(floorRatio, 2)} × that floor ` +
    `(with the decision log to a file ${fmt(diff('fleetLog', 'idle', cpuOf) / floorCpu, 2)} ×).`,
);
const sentAll = loadedRows.reduce((n, r) => n + allSent(r.key), 0);
const okAll = loadedRows.reduce((n, r) => n + all200(r.key), 0);
const targets: Target[] = [
  {
    what: 'reports + uploads (decision log off), server CPU above idle',
    measured: `${pct(aboveIdle, 2)} of a core`,
    target: `< ${pct(TARGET_ABOVE_IDLE, 0)}`,
    met: aboveIdle < TARGET_ABOVE_IDLE,
  },
  {
    what: 'the same, × the floor (node:http + gunzip + JSON.parse)',
    measured: fmt(floorRatio, 2),
    target: `≤ ${fmt(FLOOR_RATIO_TARGET, 2)}`,
    met: floorRatio <= FLOOR_RATIO_TARGET,
  },
  {
    what: "agents' requests answered 200",
    measured: `${fmt(okAll)} of ${fmt(sentAll)}`,
    target: 'all',
    met: sentAll > 0 && okAll === sentAll,
  },
];
console.log('');
console.log('Targets');
for (const line of targetLines(targets)) console.log(`  ${line}`);
console.log('');
console.log(
  `Also: with --decision-log to a file, ${pct(diff('fleetLog', 'idle', cpuOf), 2)} of a core above idle; ` +
    `upload p99 ${fmt(med('fleet', p99Of('logs')), 2)} ms (log off), ${fmt(med('fleetLog', p99Of('logs')), 2)} ms (log file); ` +
    `report p99 ${fmt(med('reports', p99Of('status')), 2)} ms (reports only).`,
);
process.exit(0);
