// HTTP benchmark (make bench-http; also part of make bench). Every server variant runs in its own
// process pinned to core 0 and the load generator in one pinned to core 1, all in one run, with the
// variants' order rotated each round so drift hits them alike. Figures are medians of the rounds and
// ratios are taken against the raw node:http baseline of the same round. Not a test: a missed
// target prints MISS and the exit code stays 0. BENCH_QUICK=1 is a short smoke check for CI.
//   node bench/http.ts                      5 rounds × 5 s per variant, 10,000 long polls
//   BENCH_QUICK=1 node bench/http.ts        2 rounds × 2 s (about a minute)
//   OPA_BIN=/usr/local/bin/opa ...          adds OPA's REST API serving the same bundle
//   BENCH_RATE=3000 ...                     fixed-load rate (default: half the slowest variant's saturation rate)
//   BENCH_BASELINE=../other-checkout ...    also measures that checkout's service (decisions, AuthZEN, 304) in the same
//                                           rounds and prints this tree / baseline for each path
//   node bench/http/profile.ts decide       where a variant's server time goes (a CPU profile under load)
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeCheckout, startBaseline, withBaseline, checkBaseline, type Baseline } from './http/baseline.ts';
import { baselineLines } from './http/baseline-report.ts';
import { measureLongPolls, type LongPollResult } from './http/longpolls.ts';
import { fileLimits, fmt, kb, machine, table, targetLines, type Target } from './http/report.ts';
import { measureRounds, ratio, summarise, unexpected, type Sample, type Summary, type Variant } from './http/rounds.ts';
import { pinToLoadCore } from './http/cores.ts';
import { SATURATION_TOOL } from './http/loadgen.ts';
import { checkDecisions, startFleet, startLoadgen, variantsOf } from './http/variants.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const ROUNDS = QUICK ? 2 : 5;
const RUN_S = QUICK ? 2 : 5;
const WARMUP_S = QUICK ? 1 : 3;
const SETTLE_S = 1;
const CONNECTIONS = 50;
const LONG_POLLS = 10_000;
const LONG_POLL_WAIT_S = 60;
const OPA_BIN = process.env['OPA_BIN'] || undefined;
const BASELINE = process.env['BENCH_BASELINE'] || undefined;
const TREE = resolve(fileURLToPath(new URL('..', import.meta.url)));

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const pct = (share: number): string => `${fmt(share * 100)}%`;
/** Above this, another process took a noticeable share of a core during a run. */
const OTHER_LOAD_WARN = 0.05;

console.log(
  `acl-operator HTTP benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);
console.log(`servers on core 0, load generator on core 1 (${SATURATION_TOOL} for saturation, bench/http/generator.ts for fixed load)`);
pinToLoadCore();
const loadgen = await startLoadgen();
const fleet = await startFleet(OPA_BIN);
console.log(
  `started: service with 10 rules in ${fmt(fleet.small.ready.startMs)} ms, with 10,000 rules in ${fmt(fleet.large.ready.startMs)} ms${fleet.opa ? `; OPA ${fleet.opa.version}` : '; OPA not measured (set OPA_BIN)'}`,
);
for (const line of await checkDecisions(fleet)) console.log(line);

// Started after ours, so our start times above are measured as without BENCH_BASELINE.
let baseline: Baseline | undefined;
if (BASELINE) {
  const started = await startBaseline(BASELINE);
  if (!started.ok) {
    console.log(`BENCH_BASELINE=${BASELINE}: ${started.problem}`);
    process.exit(2);
  }
  baseline = started.baseline;
  const { small, large } = baseline;
  console.log(`this tree: ${describeCheckout(TREE)}; baseline: ${baseline.root}, ${baseline.checkout}`);
  console.log(
    `started: the baseline's service with 10 rules in ${fmt(small.startMs ?? NaN)} ms, with 10,000 rules in ${fmt(large.startMs ?? NaN)} ms (side by side)`,
  );
  for (const line of await checkBaseline(fleet, baseline)) console.log(line);
}

const variants = baseline ? withBaseline(variantsOf(fleet), baseline) : variantsOf(fleet);
const spec = (v: Variant) => ({ port: v.port, requests: v.requests, connections: CONNECTIONS, durationS: RUN_S });
const showRun =
  (phase: string) =>
  (v: Variant, round: number, s: Sample): void => {
    const r = s.result;
    progress(
      `  ${phase} round ${round + 1}/${ROUNDS}  ${v.label.padEnd(36)} ${fmt(r.rps).padStart(7)} req/s  p50 ${fmt(r.p50Ms, 2)} ms  p99 ${fmt(r.p99Ms, 2)} ms  ${fmt(s.cpuUsPerResponse, 1)} µs CPU/req  other load ${pct(s.otherLoad.serverCore)}/${pct(s.otherLoad.loadCore)}`,
    );
    const wrong = unexpected(v, s);
    if (wrong) console.log(`WARNING ${wrong}`);
  };

progress(`warming up: ${WARMUP_S} s per variant`);
for (const v of variants) await loadgen.call('saturate', { ...spec(v), durationS: WARMUP_S });

progress('saturation runs');
const saturated = await measureRounds(
  variants,
  ROUNDS,
  RUN_S,
  SETTLE_S,
  (v, durationS) => loadgen.call('saturate', { ...spec(v), durationS }),
  showRun('saturation'),
  baseline !== undefined,
);
const sat = new Map<string, Summary>([...saturated].map(([k, s]) => [k, summarise(s)]));
const of = <T>(m: Map<string, T>, key: string): T => m.get(key) as T;

// "The same load": a rate every variant of ours sustains with room to spare, so p99 shows the cost
// of a request rather than the queue that saturation builds (at saturation p99 ≈ connections / rate).
const ours = ['raw', 'decide', 'authzen', 'decide10k', 'poll304'];
const rate =
  Number(process.env['BENCH_RATE']) || Math.max(100, Math.floor((0.5 * Math.min(...ours.map((k) => of(sat, k).rps))) / 100) * 100);
const pacedVariants = variants.filter((v) => v.key !== 'opa' || of(sat, 'opa').rps >= 1.25 * rate);
progress(`fixed-load runs at ${rate} req/s`);
const pacedSamples = await measureRounds(
  pacedVariants,
  ROUNDS,
  RUN_S,
  SETTLE_S,
  (v, durationS) => loadgen.call('paced', { ...spec(v), durationS, rate }),
  showRun('fixed load'),
  baseline !== undefined,
);
const paced = new Map<string, Summary>([...pacedSamples].map(([k, s]) => [k, summarise(s)]));

// How long a change takes to reach the bundle (folder re-read, compile, rebuild), at both sizes.
const rebuild10 = await fleet.small.call('change', null);
const rebuild10k = await fleet.large.call('change', null);
await fleet.stop();
await baseline?.stop();
await loadgen.stop();

const limits = fileLimits();
const longPollCount = Math.min(LONG_POLLS, limits.hard - 1_000);
if (longPollCount < LONG_POLLS)
  console.log(`WARNING open-file limit ${limits.hard}: holding ${longPollCount} long polls instead of ${LONG_POLLS} (raise ulimit -n)`);
progress(`long polls: holding ${longPollCount}`);
const polls: LongPollResult = await measureLongPolls(longPollCount, LONG_POLL_WAIT_S);

const rpsOf = (s: Sample): number => s.result.rps;
const cpuOf = (s: Sample): number => s.cpuUsPerResponse;
const vsRaw = (m: Map<string, Sample[]>, key: string): number => ratio(of(m, key), of(m, 'raw'), rpsOf);

console.log('');
console.log(
  `Saturation: ${CONNECTIONS} connections, one request in flight each, ${ROUNDS} rounds × ${RUN_S} s per variant (medians; × raw is the median of per-round ratios)`,
);
for (const line of table(
  ['variant', 'req/s', 'p50 ms', 'p99 ms', '× raw', 'server CPU/req', 'server core', 'loadgen core', 'other load'],
  variants.map((v) => {
    const s = of(sat, v.key);
    return [
      v.label,
      fmt(s.rps),
      fmt(s.p50Ms, 2),
      fmt(s.p99Ms, 2),
      fmt(vsRaw(saturated, v.key), 2),
      `${fmt(s.cpuUsPerResponse, 1)} µs`,
      pct((s.rps * s.cpuUsPerResponse) / 1e6),
      pct(s.loadgenCpu),
      `${pct(s.otherServerCore)}/${pct(s.otherLoadCore)}`,
    ];
  }),
))
  console.log(`  ${line}`);
console.log('  (server core: the share of core 0 the server used; well under 100% means something else, usually the load');
console.log('   generator, limited that row. other load: CPU other processes took on core 0 / core 1 during the runs)');
console.log('');
console.log(
  `Fixed load: ${fmt(rate)} req/s over ${CONNECTIONS} connections, latency from when each request was due, ${ROUNDS} rounds × ${RUN_S} s`,
);
for (const line of table(
  ['variant', 'req/s', 'p50 ms', 'p99 ms', 'server CPU/req', 'late', 'other load'],
  pacedVariants.map((v) => {
    const s = of(paced, v.key);
    return [
      v.label,
      fmt(s.rps),
      fmt(s.p50Ms, 2),
      fmt(s.p99Ms, 2),
      `${fmt(s.cpuUsPerResponse, 1)} µs`,
      fmt(s.late),
      `${pct(s.otherServerCore)}/${pct(s.otherLoadCore)}`,
    ];
  }),
))
  console.log(`  ${line}`);
console.log('  (late: requests that found all connections busy; more than a few means the server fell behind)');
console.log('');
console.log(
  `Change to bundle published: 10 rules ${fmt(rebuild10.publishedMs - rebuild10.receivedMs)} ms, 10,000 rules ${fmt(rebuild10k.publishedMs - rebuild10k.receivedMs)} ms (folder re-read, compile, rebuild)`,
);
console.log(
  `Long polls: ${fmt(polls.held)} held (opened in ${fmt(polls.openMs)} ms); per held request: RSS ${kb(polls.rssPerHeld)}, JS heap ${kb(polls.heapPerHeld)}, external ${kb(polls.externalPerHeld)}`,
);
console.log(
  `  after a change: ${fmt(polls.answered)} answered (${Object.entries(polls.statusCodes)
    .map(([c, n]) => `${fmt(n)} × ${c}`)
    .join(
      ', ',
    )}${polls.errors ? `, ${polls.errors} errors` : ''}); first 200 at ${fmt(polls.firstMs)} ms after the change, last at ${fmt(polls.releaseMs)} ms`,
);

const pacedP99 = (key: string): number => of(paced, key).p99Ms;
const decideVsRaw = vsRaw(saturated, 'decide');
const decideVsOpa = saturated.has('opa') ? ratio(of(saturated, 'decide'), of(saturated, 'opa'), rpsOf) : undefined;
const pollVsRaw = vsRaw(saturated, 'poll304');
const authzenVsDecide = ratio(of(saturated, 'authzen'), of(saturated, 'decide'), rpsOf);
const loggedVsDecide = ratio(of(saturated, 'decideLog'), of(saturated, 'decide'), rpsOf);
const cpu10kVs10 = ratio(of(pacedSamples, 'decide10k'), of(pacedSamples, 'decide'), cpuOf);
const allReleased = polls.answered === polls.held && polls.statusCodes['200'] === polls.held;
const targets: Target[] = [
  { what: 'decisions req/s, × raw', measured: fmt(decideVsRaw, 2), target: '≥ 0.65', met: decideVsRaw >= 0.65 },
  decideVsOpa === undefined
    ? { what: 'decisions req/s, × OPA', measured: 'not run: set OPA_BIN', target: '≥ 1.5', met: undefined }
    : { what: 'decisions req/s, × OPA', measured: fmt(decideVsOpa, 2), target: '≥ 1.5', met: decideVsOpa >= 1.5 },
  { what: '304 path req/s, × raw', measured: fmt(pollVsRaw, 2), target: '≥ 0.70', met: pollVsRaw >= 0.7 },
  {
    what: 'AuthZEN evaluation req/s, × POST /authorization',
    measured: fmt(authzenVsDecide, 2),
    target: '≥ 0.90',
    met: authzenVsDecide >= 0.9,
  },
  {
    what: 'decisions req/s with --decision-log to a file, × without',
    measured: fmt(loggedVsDecide, 2),
    target: '≥ 0.85',
    met: loggedVsDecide >= 0.85,
  },
  ...(['decide', 'poll304'] as const).map((key) => ({
    what: `${key === 'decide' ? 'decisions' : '304 path'} p99 at ${fmt(rate)} req/s`,
    measured: `${fmt(pacedP99(key), 2)} ms (raw ${fmt(pacedP99('raw'), 2)} ms)`,
    target: '≤ raw + 1 ms',
    met: pacedP99(key) <= pacedP99('raw') + 1,
  })),
  {
    what: `CPU per decision, 10,000 / 10 rules, at ${fmt(rate)} req/s`,
    measured: fmt(cpu10kVs10, 2),
    target: '≤ 1.1',
    met: cpu10kVs10 <= 1.1,
  },
  {
    what: `memory per held long poll (RSS, ${fmt(polls.held)} held)`,
    measured: kb(polls.rssPerHeld),
    target: '≤ 32 KB',
    met: polls.rssPerHeld <= 32 * 1024,
  },
  {
    what: 'all long polls answered 200 after a change',
    measured: allReleased ? `${fmt(polls.releaseMs)} ms` : `${fmt(polls.statusCodes['200'] ?? 0)} of ${fmt(polls.held)}`,
    target: '≤ 1,000 ms',
    met: allReleased && polls.releaseMs <= 1000,
  },
];
const noisy = [...saturated.values(), ...pacedSamples.values()]
  .flat()
  .filter((x) => x.otherLoad.serverCore > OTHER_LOAD_WARN || x.otherLoad.loadCore > OTHER_LOAD_WARN).length;
if (noisy > 0)
  console.log(
    `\nWARNING other processes took more than ${pct(OTHER_LOAD_WARN)} of a core in ${noisy} runs: the machine was not quiet, so figures from this run are suspect`,
  );
console.log('');
console.log('Targets');
for (const line of targetLines(targets)) console.log(`  ${line}`);
console.log('');
console.log(
  'Also: ' +
    `decisions with 10,000 rules ${fmt(vsRaw(saturated, 'decide10k'), 2)} × raw; ` +
    `CPU per decision 10,000 / 10 rules at saturation ${fmt(ratio(of(saturated, 'decide10k'), of(saturated, 'decide'), cpuOf), 2)}; ` +
    `p99 at saturation: raw ${fmt(of(sat, 'raw').p99Ms, 2)} ms, decisions ${fmt(of(sat, 'decide').p99Ms, 2)} ms, 304 ${fmt(of(sat, 'poll304').p99Ms, 2)} ms.`,
);
if (baseline) {
  console.log('');
  console.log(`Against the baseline: ${baseline.root}, ${baseline.checkout} (this tree: ${TREE}, ${describeCheckout(TREE)})`);
  for (const line of baselineLines(variants, saturated, pacedSamples, rate)) console.log(`  ${line}`);
}
process.exit(0);
