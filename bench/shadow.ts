// What shadow decisions cost POST /authorization (make bench-shadow; docs/benchmarks.md). The same
// service (bench/http/servers/fleet-service.ts, 10 live rules) three times: no proposal anywhere; 100
// Proposed rules in the tenant decided (one in ten over the requests' own types, so every request
// meets one); 100 Proposed rules in another tenant only. Each on core 0 with the others stopped,
// saturated from core 1 with 50 connections, the order rotated each round (bench/http/rounds.ts).
// Server CPU per decision is the figure: ratios to "none" are medians of per-round ratios, in the same
// run. Not a test: a missed target prints MISS and the exit code stays 0.
//   node bench/shadow.ts                   5 rounds × 5 s
//   BENCH_QUICK=1 node bench/shadow.ts     2 rounds × 2 s (a smoke check)
import { fileURLToPath } from 'node:url';
import { pinToLoadCore, SERVER_CORE } from './http/cores.ts';
import { spawnPinned } from './http/ipc.ts';
import { fmt, machine, table, targetLines } from './http/report.ts';
import { saturateRounds, ratio, summarise, type Sample, type Variant } from './http/rounds.ts';
import type { FleetServiceCommands, FleetServiceReady } from './http/servers/fleet-service.ts';
import { decisionBodies, TENANT, tenantRules } from './http/tenant.ts';
import { decisionRequest, startLoadgen } from './http/variants.ts';
import { measureInProcess } from './shadow-inprocess.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const ROUNDS = QUICK ? 2 : 5;
const RUN_S = QUICK ? 2 : 5;
const CONNECTIONS = 50;
const PROPOSED = 100;
/** The bar: at most this much more CPU per decision with Proposed rules in the tenant. */
const TARGET = 1.05;

console.log(
  `acl-operator shadow-decision benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);
pinToLoadCore();

const script = fileURLToPath(new URL('./http/servers/fleet-service.ts', import.meta.url));
const start = (proposed: number, tenant: string) =>
  spawnPinned<FleetServiceCommands, FleetServiceReady>(
    SERVER_CORE,
    script,
    ['--rules', '10', '--timers', 'off', '--log-level', 'silent', '--proposed', String(proposed), '--proposed-in', tenant],
    ['--expose-gc'],
  );
const loadgen = await startLoadgen();
const [none, proposed, other] = await Promise.all([start(0, TENANT), start(PROPOSED, TENANT), start(PROPOSED, 'other')]);
const requests = decisionBodies(tenantRules(10), 1_000, 1).map(decisionRequest);
const cpuOf = (p: typeof none) => async (): Promise<number> => (await p.call('stats', null)).cpuUs;
const variant = (key: string, label: string, p: typeof none): Variant => ({
  key,
  label,
  port: p.ready.port,
  pid: p.pid,
  requests,
  expect: 200,
  cpuUs: cpuOf(p),
});
const variants: Variant[] = [
  variant('none', 'no Proposed rules', none),
  variant('proposed', `${PROPOSED} Proposed rules in the tenant`, proposed),
  variant('other', `${PROPOSED} Proposed rules in another tenant`, other),
];
const samples = await saturateRounds(loadgen, variants, {
  rounds: ROUNDS,
  runS: RUN_S,
  warmS: QUICK ? 1 : 3,
  connections: CONNECTIONS,
  labelWidth: 38,
  cpuDigits: 2,
});
await Promise.all([none.stop(), proposed.stop(), other.stop(), loadgen.stop()]);

const of = (key: string): Sample[] => samples.get(key) as Sample[];
const cpu = (s: Sample): number => s.cpuUsPerResponse;
const rps = (s: Sample): number => s.result.rps;
console.log('');
console.log(
  `POST /authorization, 10 live rules, half allowed, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${RUN_S} s (medians; ratios are medians of per-round ratios to "none")`,
);
for (const line of table(
  ['variant', 'req/s', 'p99 ms', 'server CPU/req', 'CPU × none', 'req/s × none'],
  variants.map((v) => {
    const s = summarise(of(v.key));
    return [
      v.label,
      fmt(s.rps),
      fmt(s.p99Ms, 2),
      `${fmt(s.cpuUsPerResponse, 2)} µs`,
      fmt(ratio(of(v.key), of('none'), cpu), 3),
      fmt(ratio(of(v.key), of('none'), rps), 3),
    ];
  }),
))
  console.log(`  ${line}`);
// The hook's own cost, measured in this process (the servers are stopped): stable where the HTTP
// figures move with whatever else the machine runs.
const own = measureInProcess(QUICK ? 6 : 20, QUICK ? 20 : 50);
const addedNs = own.shadowedNs - own.decideNs;
const perRequestUs = summarise(of('none')).cpuUsPerResponse;
console.log(
  `  in one process: decide() ${fmt(own.decideNs, 0)} ns, decide() + the ledger ${fmt(own.shadowedNs, 0)} ns a decision: ${fmt(addedNs, 0)} ns added, ${fmt((100 * addedNs) / (perRequestUs * 1000), 2)}% of the ${fmt(perRequestUs, 1)} µs a request costs the server`,
);
console.log('');
const inTenant = ratio(of('proposed'), of('none'), cpu);
const elsewhere = ratio(of('other'), of('none'), cpu);
for (const line of targetLines([
  {
    what: `CPU per decision with ${PROPOSED} Proposed rules in the tenant, × none`,
    measured: fmt(inTenant, 3),
    target: `≤ ${TARGET}`,
    met: inTenant <= TARGET,
  },
  {
    what: `CPU per decision with ${PROPOSED} Proposed rules in another tenant, × none`,
    measured: fmt(elsewhere, 3),
    target: '≤ 1.01 (noise)',
    met: elsewhere <= 1.01,
  },
  {
    what: `CPU the ledger adds to a decision with ${PROPOSED} Proposed rules, share of a request's server CPU (in one process)`,
    measured: `${fmt((100 * addedNs) / (perRequestUs * 1000), 2)}%`,
    target: '≤ 5%',
    met: addedNs <= 0.05 * perRequestUs * 1000,
  },
]))
  console.log(line);
process.exit(0);
