// Propagation benchmark: how long a rule edit takes to be active in every OPA of a fleet, with real
// OPAs (OPA_BIN). The standalone service serves one bundle to N OPAs started from the configuration it
// writes for that bundle. Each edit changes the rule, so the bundle revision moves, and is timed from
// the service's own publish of the new revision until (a) every agent has reported it active through
// its status report (the agent registry announces each report; nothing polls it), and (b) every OPA
// answers with it (/v1/data/system/bundles/<bundle>/manifest/revision, asked every 1-20 ms from the
// publish on).
//   1. Long polling: the generated configuration as it is (long_polling_timeout_seconds 60). The next
//      edit comes once every OPA holds a long poll again, after a random 0-250 ms.
//   2. Baseline, same run: a new service and fleet with plain polling as the service spec recommends
//      for development (min_delay_seconds 10, max_delay_seconds 30, no long polling). Each edit comes
//      after a random pause of up to max_delay_seconds, so it meets the OPAs at random points of their
//      polling cycles rather than just after the previous edit's last download.
// Figures: p50 (median), p95 and max over the edits, the ratio long-polling p50 / baseline p50, and
// acl_bundle_propagation_seconds (count, sum) from the service's /metrics over the measured edits, as
// a cross-check of the per-agent times. Not a test: a missed target prints MISS, the exit code stays 0
// (1 only when the run itself fails, e.g. an OPA exits). OPAs and folders are removed however it ends.
//   OPA_BIN=<opa> node bench/propagation.ts                 10 OPAs, 20 edits (+2 unmeasured), baseline 3 (about 3 min)
//   OPA_BIN=<opa> BENCH_QUICK=1 node bench/propagation.ts   5 edits, baseline 1 (about a minute): a smoke check
//   BENCH_AGENTS=n  BENCH_EDITS=m  BENCH_BASELINE_EDITS=k   fleet size and edit counts (k=0: no baseline)
//   BENCH_BASELINE_DELAYS=2,5   the baseline's min,max polling delay in s (default 10,30), for smoke runs only
import { loadavg } from 'node:os';
import { opaVersion } from '../test/support/opa.ts';
import { percentile } from './http/load.ts';
import { fmt, machine, table, targetLines, type Target } from './http/report.ts';
import { median } from './http/rounds.ts';
import { cleanUp, cleanUpOnExit } from './propagation/cleanup.ts';
import {
  BUNDLE_KEY,
  MAX_PROBE_GAP_MS,
  startFleet,
  withPolling,
  type Counters,
  type EditTiming,
  type FleetOptions,
} from './propagation/fleet.ts';

const OPA_BIN = process.env['OPA_BIN'] || undefined;
if (!OPA_BIN) {
  console.log('skipped: set OPA_BIN to the path of an opa executable');
  process.exit(0);
}

function count(name: string, fallback: number, min = 1): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) {
    console.error(`${name}=${text}: expected an integer of at least ${min}`);
    process.exit(2);
  }
  return n;
}
function delays(): { minS: number; maxS: number } {
  const text = process.env['BENCH_BASELINE_DELAYS'];
  if (text === undefined || text === '') return { minS: 10, maxS: 30 };
  const [minS, maxS] = text.split(',').map(Number);
  if (minS === undefined || maxS === undefined || !Number.isInteger(minS) || !Number.isInteger(maxS) || minS < 1 || maxS < minS) {
    console.error(`BENCH_BASELINE_DELAYS=${text}: expected "min,max" in whole seconds, 1 ≤ min ≤ max`);
    process.exit(2);
  }
  return { minS, maxS };
}

const QUICK = process.env['BENCH_QUICK'] === '1';
const AGENTS = count('BENCH_AGENTS', 10);
const EDITS = count('BENCH_EDITS', QUICK ? 5 : 20);
const WARMUP_EDITS = 2;
const BASELINE_EDITS = count('BENCH_BASELINE_EDITS', QUICK ? 1 : 3, 0);
const BASELINE = delays();
const SPEC_DELAYS = BASELINE.minS === 10 && BASELINE.maxS === 30;
const TARGET_MS = 1000;
/** Long polling: the longest random pause before an edit, once every OPA holds a long poll again. */
const LONG_POLL_GAP_MS = 250;

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const ms = (x: number): string => (x < 1000 ? `${fmt(x, x < 100 ? 1 : 0)} ms` : `${fmt(x / 1000, 2)} s`);
const load = (): string =>
  loadavg()
    .map((x) => fmt(x, 2))
    .join(' ');
const ENV = ['OPA_BIN', 'BENCH_QUICK', 'BENCH_AGENTS', 'BENCH_EDITS', 'BENCH_BASELINE_EDITS', 'BENCH_BASELINE_DELAYS'];
const command = [
  ...ENV.filter((k) => (process.env[k] ?? '') !== '').map((k) => `${k}=${process.env[k]}`),
  'node bench/propagation.ts',
].join(' ');
const [major, minor, patch] = opaVersion(OPA_BIN);

console.log(
  `acl-operator propagation benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`command: ${command}`);
console.log(`machine: ${machine()}; load average at start ${load()}`);
console.log(
  `OPA ${major}.${minor}.${patch} (${OPA_BIN}); ${AGENTS} OPAs on bundle ${BUNDLE_KEY}, started from the configuration the service generates`,
);
console.log(
  `long polling (the generated configuration: long_polling_timeout_seconds 60): ${EDITS} measured edits after ${WARMUP_EDITS} unmeasured`,
);
console.log(
  `baseline (plain polling, min_delay_seconds ${BASELINE.minS}, max_delay_seconds ${BASELINE.maxS}): ` +
    `${BASELINE_EDITS} edit(s), each after a random pause of 0-${BASELINE.maxS} s`,
);
if (!SPEC_DELAYS)
  console.log("  (BENCH_BASELINE_DELAYS: NOT the service spec's 10-30 s; the baseline and the ratio are for a smoke check only)");
console.log('');

interface Series {
  readonly edits: readonly EditTiming[];
  /** The service's counters over the measured edits (pauses included). */
  readonly counters: Counters;
}

type Setup = Omit<FleetOptions, 'opaBin' | 'agents' | 'label'>;

/** Starts a fleet, makes `warmup` unmeasured and `edits` measured edits, stops it. */
async function measure(label: string, setup: Setup, warmup: number, edits: number, gapMs: () => number): Promise<Series> {
  const startedAt = performance.now();
  const fleet = await startFleet({ opaBin: OPA_BIN as string, agents: AGENTS, label, ...setup });
  progress(`${label}: ${AGENTS} OPAs running revision 1 after ${ms(performance.now() - startedAt)}`);
  const line = (e: EditTiming): string =>
    `revision ${e.revision} published ${ms(e.publishMs)} after the write; all agents report it ${ms(e.reportedMs)}, all OPAs answer it ${ms(e.answeredMs)}`;
  for (let i = 0; i < warmup; i++) progress(`${label}: unmeasured edit ${i + 1}/${warmup}: ${line(await fleet.edit(gapMs()))}`);
  const before = await fleet.counters();
  const timings: EditTiming[] = [];
  for (let i = 0; i < edits; i++) {
    const gap = gapMs();
    if (gap > 2000) progress(`${label}: edit ${i + 1}/${edits} after a pause of ${ms(gap)}`);
    const e = await fleet.edit(gap);
    timings.push(e);
    progress(`${label}: edit ${i + 1}/${edits}: ${line(e)}`);
  }
  const after = await fleet.counters();
  await fleet.stop();
  const delta = (k: keyof Counters): number => after[k] - before[k];
  return {
    edits: timings,
    counters: {
      propagationCount: delta('propagationCount'),
      propagationSumS: delta('propagationSumS'),
      propagationUnder1s: delta('propagationUnder1s'),
      statusReports: delta('statusReports'),
      bundleRequests: delta('bundleRequests'),
    },
  };
}

cleanUpOnExit();
let longPolling: Series;
let baseline: Series | undefined;
try {
  longPolling = await measure(
    'long polling',
    { configure: (c) => c, longPolling: true, editTimeoutMs: 60_000 },
    WARMUP_EDITS,
    EDITS,
    () => Math.random() * LONG_POLL_GAP_MS,
  );
  if (BASELINE_EDITS > 0) {
    baseline = await measure(
      'baseline',
      {
        configure: (c) => withPolling(c, { min_delay_seconds: BASELINE.minS, max_delay_seconds: BASELINE.maxS }),
        longPolling: false,
        // Every OPA polls within max_delay_seconds; the margin covers a slow download or a retry.
        editTimeoutMs: 2 * BASELINE.maxS * 1000 + 30_000,
      },
      0,
      BASELINE_EDITS,
      () => Math.random() * BASELINE.maxS * 1000,
    );
  }
} catch (err) {
  console.log(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
  await cleanUp();
  process.exit(1);
}
await cleanUp();

const reported = (e: EditTiming): number => e.reportedMs;
const answered = (e: EditTiming): number => e.answeredMs;
const p50 = (s: Series, f: (e: EditTiming) => number): number => median(s.edits.map(f));
const rows: string[][] = [];
const row = (name: string, xs: readonly number[]): void => {
  const sorted = Float64Array.from(xs).sort();
  rows.push([name, fmt(xs.length), ms(median(xs)), ms(percentile(sorted, 0.95)), ms(Math.max(...xs))]);
};
const series: [string, Series | undefined][] = [
  ['long polling', longPolling],
  [`baseline ${BASELINE.minS}-${BASELINE.maxS} s polling`, baseline],
];
for (const [name, s] of series) {
  if (!s) continue;
  row(`${name}: all agents report it active`, s.edits.map(reported));
  row(`${name}: all OPAs answer with it`, s.edits.map(answered));
  row(
    `${name}: each agent reports it (per agent)`,
    s.edits.flatMap((e) => e.perAgentMs),
  );
}
console.log(
  `Propagation of a rule edit to ${AGENTS} OPAs, from the service's publish of the new revision (p50: median; p95: nearest rank)`,
);
for (const line of table(['series', 'samples', 'p50', 'p95', 'max'], rows)) console.log(`  ${line}`);
console.log(
  `  (each OPA is asked for its revision from the publish on, 1 ms apart at first and at most ${MAX_PROBE_GAP_MS} ms apart later;`,
);
console.log("   an OPA's time is that of its first answer with the new revision)");

console.log('');
if (baseline) {
  console.log(
    `Ratio long-polling p50 / baseline p50: all agents report it ${fmt(p50(longPolling, reported) / p50(baseline, reported), 4)},` +
      ` all OPAs answer with it ${fmt(p50(longPolling, answered) / p50(baseline, answered), 4)}` +
      ` (baseline p50 ${ms(p50(baseline, reported))} and ${ms(p50(baseline, answered))}; the issue's anchors for polling: 20-120 s)`,
  );
} else {
  console.log('Ratio long-polling p50 / baseline p50: not measured (BENCH_BASELINE_EDITS=0)');
}

console.log('');
console.log("Cross-check: acl_bundle_propagation_seconds (the service's publish → each agent reports it active) over the measured edits");
for (const [name, s] of series) {
  if (!s) continue;
  const c = s.counters;
  const ours = s.edits.flatMap((e) => e.perAgentMs);
  const expected = AGENTS * s.edits.length;
  const oursMean = ours.reduce((a, b) => a + b, 0) / ours.length;
  const theirsMean = (c.propagationSumS * 1000) / c.propagationCount;
  console.log(
    `  ${name}: count ${fmt(c.propagationCount)} (expected ${fmt(expected)} = ${AGENTS} agents × ${s.edits.length} edits),` +
      ` sum ${fmt(c.propagationSumS, 3)} s, mean ${ms(theirsMean)} (ours, per agent: ${ms(oursMean)}), at most 1 s: ${fmt(c.propagationUnder1s)}`,
  );
  console.log(
    `    status reports ${fmt(c.statusReports)} (${fmt(c.statusReports / expected, 1)} per agent per edit, pauses included),` +
      ` bundle requests ${fmt(c.bundleRequests)}`,
  );
  if (c.propagationCount !== expected)
    console.log(`  WARNING ${name}: the histogram counted ${c.propagationCount} propagations, not ${expected}`);
  else if (Math.abs(theirsMean - oursMean) > 5 + 0.01 * oursMean)
    console.log(`  WARNING ${name}: the histogram's mean and ours differ by more than 5 ms + 1%`);
}
const publish = longPolling.edits.map((e) => e.publishMs);
const listeners = longPolling.edits.map((e) => e.listenersMs);
console.log(
  `Also (long polling): manifest write → publish (re-read, compile, build) p50 ${ms(median(publish))}, max ${ms(Math.max(...publish))};` +
    ` the service's publish listeners (answering the ${AGENTS} held long polls among them) p50 ${ms(median(listeners))}, max ${ms(Math.max(...listeners))}`,
);
console.log(`Load average at end: ${load()}`);

const target = (what: string, f: (e: EditTiming) => number): Target => {
  const x = p50(longPolling, f);
  return { what, measured: ms(x), target: '< 1 s', met: x < TARGET_MS };
};
console.log('');
console.log('Targets');
const targets = [
  target('long polling: every agent reports a rule edit active, p50', reported),
  target('long polling: every OPA answers with it, p50', answered),
];
for (const line of targetLines(targets)) console.log(`  ${line}`);
process.exit(0);
