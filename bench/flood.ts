// Hostile uploads against the receivers (make bench-flood): what a flood of OPA uploads that inflate
// to JSON nested two million deep or a million wide does to the decisions being answered, and to
// the service's memory. The service runs as a replica runs it (`acl-operator serve` with the
// Deployment's own NODE_OPTIONS, read from deploy/30-deployment.yaml) pinned to core 0; decisions
// are timed by a prober of their own on core 1 (one at a time, one every 2 ms), first quiet, then
// while 1, 4 and 16 uploads at a time arrive again and again; a valid status report goes with each
// wave. The same runs as test/timing/receivers.test.ts (test/support/flood.ts), each round on a fresh service; figures
// are ratios against the quiet run of the same round. Not a test: a missed goal prints MISS, exit 0.
//   node bench/flood.ts                  3 rounds, 1,000 decisions timed per run
//   BENCH_QUICK=1 node bench/flood.ts    1 round, 300 decisions per run (a smoke check)
import { pinToLoadCore } from './http/cores.ts';
import { fmt, machine, targetLines, type Target } from './http/report.ts';
import { median } from './http/rounds.ts';
import { deploymentLimits, floodLines, measureFloods, startProber, startServiceProcess, type FloodFigures } from '../test/support/flood.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const ROUNDS = QUICK ? 1 : 3;
const SAMPLES = QUICK ? 300 : 1000;
const STAGES = [1, 4, 16] as const;
/** The goals test/timing/receivers.test.ts holds. */
const MAX_DECISION_MS = 50;
const PEAK_SHARE = 0.75;
const SETTLE_BYTES = 48 * 2 ** 20;

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

console.log(
  `acl-operator hostile-upload benchmark, ${new Date().toISOString()}${QUICK ? ' (BENCH_QUICK=1: a smoke check, not figures to quote)' : ''}`,
);
console.log(`machine: ${machine()}`);
pinToLoadCore('the service and the decision prober');
const limits = deploymentLimits();

const rounds: FloodFigures[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  progress(`round ${round}/${ROUNDS}: starting the service`);
  const service = await startServiceProcess(limits.nodeOptions);
  const prober = await startProber(service.apiUrl);
  try {
    const figures = await measureFloods(service, prober, {
      stages: STAGES,
      samplesPerStage: SAMPLES,
      stageBudgetMs: 60_000,
      waves: 4,
      quietSamples: SAMPLES,
      settleBytes: SETTLE_BYTES,
      settleMs: 30_000,
      progress: (line) => progress(`  ${line}`),
    });
    rounds.push(figures);
    console.log('');
    console.log(`Round ${round}`);
    for (const line of floodLines(figures, limits)) console.log(`  ${line}`);
  } finally {
    prober.close();
    await service.stop();
  }
}

const mib = (bytes: number): string => `${fmt(bytes / 2 ** 20)} MiB`;
const med = (f: (r: FloodFigures) => number): number => median(rounds.map(f));
const quietMax = med((r) => r.quiet.maxMs);
console.log('');
console.log(
  `Over ${ROUNDS} round(s) (medians): quiet max ${fmt(quietMax, 1)} ms, quiet p99 ${fmt(
    med((r) => r.quiet.p99Ms),
    2,
  )} ms`,
);
for (const [i, parallel] of STAGES.entries()) {
  const max = med((r) => r.stages[i]?.latency.maxMs ?? NaN);
  const p99 = med((r) => r.stages[i]?.latency.p99Ms ?? NaN);
  const perS = med((r) => ((r.stages[i]?.uploads ?? 0) * 1000) / (r.stages[i]?.durationMs ?? NaN));
  console.log(
    `  ${String(parallel).padStart(2)} at once: decision max ${fmt(max, 1)} ms (${fmt(max / quietMax, 2)} × quiet), p99 ${fmt(p99, 2)} ms; ` +
      `${fmt(perS)} hostile uploads refused a second`,
  );
}
const worst = Math.max(...rounds.flatMap((r) => r.stages.map((s) => s.latency.maxMs)));
const peak = Math.max(...rounds.map((r) => r.memory.peakBytes));
const grew = Math.max(...rounds.map((r) => r.memory.afterBytes - r.memory.startBytes));
const targets: Target[] = [
  {
    what: 'decisions during the floods, slowest',
    measured: `${fmt(worst, 1)} ms (quiet ${fmt(quietMax, 1)} ms)`,
    target: `≤ ${MAX_DECISION_MS} ms`,
    met: worst <= MAX_DECISION_MS,
  },
  {
    what: 'resident memory, peak over the run (start-up included)',
    measured: mib(peak),
    target: `≤ ${mib(PEAK_SHARE * limits.memoryLimitBytes)} (${PEAK_SHARE * 100}% of the pod's ${mib(limits.memoryLimitBytes)})`,
    met: peak <= PEAK_SHARE * limits.memoryLimitBytes,
  },
  {
    what: 'resident memory after the floods, above the start',
    measured: mib(grew),
    target: `≤ ${mib(SETTLE_BYTES)}`,
    met: grew <= SETTLE_BYTES,
  },
];
console.log('');
console.log('Targets');
for (const line of targetLines(targets)) console.log(`  ${line}`);
process.exit(0);
