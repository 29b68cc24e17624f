// What the decision log costs POST /authorization, alone (make bench-decision-log). The same service
// three times (bench/http/servers/fleet-service.ts, 10 rules): --decision-log off, to a file, and to
// /dev/null (every line made and handed to the kernel, none stored), each on core 0 with the others
// stopped, saturated from core 1 with 50 connections, the order rotated each round. bench/http.ts
// has the file row among all variants; this one tells making the lines from storing them. Not a
// test: a missed target prints MISS and the exit code stays 0.
//   node bench/decision-log.ts                   5 rounds × 5 s
//   BENCH_QUICK=1 node bench/decision-log.ts     2 rounds × 2 s (a smoke check)
import { fileURLToPath } from 'node:url';
import { pinToLoadCore, SERVER_CORE } from './http/cores.ts';
import { spawnPinned } from './http/ipc.ts';
import { fmt, machine, table, targetLines } from './http/report.ts';
import { saturateRounds, median, ratio, summarise, type Sample, type Variant } from './http/rounds.ts';
import type { FleetServiceCommands, FleetServiceReady } from './http/servers/fleet-service.ts';
import { decisionBodies, tenantRules } from './http/tenant.ts';
import { decisionRequest, loggedCpuOf, startLoadgen } from './http/variants.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const ROUNDS = QUICK ? 2 : 5;
const RUN_S = QUICK ? 2 : 5;
const CONNECTIONS = 50;
/** The bar: with the log on, at least this share of the throughput with it off. */
const TARGET = 0.85;

console.log(
  `acl-operator decision-log benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);
pinToLoadCore();

const script = fileURLToPath(new URL('./http/servers/fleet-service.ts', import.meta.url));
const start = (to: 'off' | 'file' | 'null') =>
  spawnPinned<FleetServiceCommands, FleetServiceReady>(
    SERVER_CORE,
    script,
    ['--rules', '10', '--decision-log', to, '--timers', 'off', '--log-level', 'silent'],
    ['--expose-gc'],
  );
const loadgen = await startLoadgen();
const [off, file, devNull] = await Promise.all([start('off'), start('file'), start('null')]);
const requests = decisionBodies(tenantRules(10), 1_000, 1).map(decisionRequest);
const cpuOf = (p: typeof off) => async (): Promise<number> => (await p.call('stats', null)).cpuUs;
const variants: Variant[] = [
  { key: 'off', label: '--decision-log off', port: off.ready.port, pid: off.pid, requests, expect: 200, cpuUs: cpuOf(off) },
  { key: 'file', label: '--decision-log <file>', port: file.ready.port, pid: file.pid, requests, expect: 200, cpuUs: loggedCpuOf(file) },
  {
    key: 'null',
    label: '--decision-log /dev/null',
    port: devNull.ready.port,
    pid: devNull.pid,
    requests,
    expect: 200,
    cpuUs: cpuOf(devNull),
  },
];
const samples = await saturateRounds(loadgen, variants, {
  rounds: ROUNDS,
  runS: RUN_S,
  warmS: QUICK ? 1 : 3,
  connections: CONNECTIONS,
  labelWidth: 26,
  cpuDigits: 1,
});
const counters = await file.call('counters', null);
await Promise.all([off.stop(), file.stop(), devNull.stop(), loadgen.stop()]);

const of = (key: string): Sample[] => samples.get(key) as Sample[];
const rps = (s: Sample): number => s.result.rps;
const vsOff = (key: string): number => ratio(of(key), of('off'), rps);
const extraUs = (key: string): number => median(of(key).map((s, i) => s.cpuUsPerResponse - (of('off')[i] as Sample).cpuUsPerResponse));
console.log('');
console.log(
  `POST /authorization, 10 rules, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${RUN_S} s (medians; ratios are medians of per-round ratios)`,
);
for (const line of table(
  ['variant', 'req/s', 'p99 ms', '× off', 'server CPU/req', 'added CPU/req'],
  variants.map((v) => {
    const s = summarise(of(v.key));
    return [
      v.label,
      fmt(s.rps),
      fmt(s.p99Ms, 2),
      fmt(vsOff(v.key), 2),
      `${fmt(s.cpuUsPerResponse, 1)} µs`,
      v.key === 'off' ? '' : `${fmt(extraUs(v.key), 1)} µs`,
    ];
  }),
))
  console.log(`  ${line}`);
console.log(
  `  decision-log lines written by the file variant: ${fmt(counters.decisionLogLines)}, dropped: ${fmt(counters.decisionLogDropped)}`,
);
console.log('');
const measured = vsOff('file');
for (const line of targetLines([
  {
    what: 'decisions req/s with --decision-log to a file, × off',
    measured: fmt(measured, 2),
    target: `≥ ${TARGET}`,
    met: measured >= TARGET,
  },
]))
  console.log(line);
process.exit(0);
