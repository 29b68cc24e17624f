// Rounds: every variant once per round, the order rotated each round, so slow drift of the machine
// (other tenants of the host, thermal, memory) hits every variant alike. Figures are medians of the
// rounds; a ratio is the median of the per-round ratios, as in bench/run.ts.
import type { HttpRequest, LoadResult } from './load.ts';
import { coreBusyUs } from './procfs.ts';
import { SERVER_CORE, LOADGEN_CORE } from './cores.ts';
import { fmt } from './report.ts';

export interface Variant {
  readonly key: string;
  readonly label: string;
  readonly port: number;
  /** The server process, paused while other variants are measured. */
  readonly pid: number;
  readonly requests: readonly HttpRequest[];
  /** The status every response must have; anything else is reported. */
  readonly expect: number;
  /** CPU time of the server process so far, µs. */
  cpuUs(): Promise<number>;
}

export interface Sample {
  readonly result: LoadResult;
  /** Server CPU µs per response during the run. */
  readonly cpuUsPerResponse: number;
  /**
   * CPU used on each core by anything but the benchmark, as a share of the run's wall time: other
   * processes on a shared machine. On the load core this is approximate (the load generator's own
   * CPU is measured over the timed window only).
   */
  readonly otherLoad: { readonly serverCore: number; readonly loadCore: number };
}

export interface Summary {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuUsPerResponse: number;
  readonly loadgenCpu: number;
  readonly late: number;
  readonly otherServerCore: number;
  readonly otherLoadCore: number;
  readonly rounds: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `run()` with every other server process stopped (SIGSTOP, then SIGCONT). An idle server is
 * not idle to the core: V8 finishes concurrent marking and compacts the heap some time after a
 * burst of allocation (the 10,000-rule service, idle, compacted in a 64 ms pause), work that would
 * otherwise land in another variant's run.
 */
async function alone<T>(v: Variant, all: readonly Variant[], run: () => Promise<T>): Promise<T> {
  const others = [...new Set(all.map((x) => x.pid))].filter((pid) => pid !== v.pid);
  for (const pid of others) process.kill(pid, 'SIGSTOP');
  try {
    return await run();
  } finally {
    for (const pid of others) process.kill(pid, 'SIGCONT');
  }
}

/**
 * Runs `rounds` rounds of `run(v, durationS)`; returns each variant's samples, in round order. Each
 * measured run follows an unmeasured one of `settleS` on the same server: a server resumed after a
 * pause first runs the timers and heap work that fell due while it was stopped (with 10,000 rules,
 * a full collection of a 100 MB heap), which is not the cost of the requests measured next.
 * `reverseOddRounds`: odd rounds run the rotated order backwards, so of two neighbours compared with
 * each other (a path and its twin on BENCH_BASELINE's tree) neither always runs first.
 */
export async function measureRounds(
  variants: readonly Variant[],
  rounds: number,
  durationS: number,
  settleS: number,
  run: (v: Variant, durationS: number) => Promise<LoadResult>,
  onSample?: (v: Variant, round: number, s: Sample) => void,
  reverseOddRounds = false,
): Promise<Map<string, Sample[]>> {
  const samples = new Map<string, Sample[]>(variants.map((v) => [v.key, []]));
  for (let round = 0; round < rounds; round++) {
    const rotated = variants.map((_, i) => variants[(i + round) % variants.length] as Variant);
    if (reverseOddRounds && round % 2 === 1) rotated.reverse();
    for (const v of rotated) {
      const sample = await alone(v, variants, async (): Promise<Sample> => {
        await run(v, settleS);
        const cpu0 = await v.cpuUs();
        const busy0 = await coreBusyUs();
        const t0 = performance.now();
        const result = await run(v, durationS);
        const wallUs = (performance.now() - t0) * 1000;
        const busy1 = await coreBusyUs();
        const serverUs = (await v.cpuUs()) - cpu0;
        const busy = (core: number): number => (busy1[core] ?? 0) - (busy0[core] ?? 0);
        return {
          result,
          cpuUsPerResponse: serverUs / Math.max(1, result.responses),
          otherLoad: {
            serverCore: Math.max(0, busy(SERVER_CORE) - serverUs) / wallUs,
            loadCore: Math.max(0, busy(LOADGEN_CORE) - result.loadgenCpu * result.durationS * 1e6) / wallUs,
          },
        };
      });
      samples.get(v.key)?.push(sample);
      onSample?.(v, round, sample);
      await pause(250); // closed connections drain before the next variant starts
    }
  }
  return samples;
}

export function summarise(samples: readonly Sample[]): Summary {
  const of = (f: (s: Sample) => number): number => median(samples.map(f));
  return {
    rps: of((s) => s.result.rps),
    p50Ms: of((s) => s.result.p50Ms),
    p99Ms: of((s) => s.result.p99Ms),
    cpuUsPerResponse: of((s) => s.cpuUsPerResponse),
    loadgenCpu: of((s) => s.result.loadgenCpu),
    late: samples.reduce((n, s) => n + s.result.late, 0),
    otherServerCore: of((s) => s.otherLoad.serverCore),
    otherLoadCore: of((s) => s.otherLoad.loadCore),
    rounds: samples.length,
  };
}

/** f(a's sample) / f(b's sample) in each round, in round order. */
export function roundRatios(a: readonly Sample[], b: readonly Sample[], f: (s: Sample) => number): number[] {
  return a.map((s, i) => f(s) / f(b[i] as Sample));
}

/** Median over rounds of f(a's sample) / f(b's sample) in the same round. */
export function ratio(a: readonly Sample[], b: readonly Sample[], f: (s: Sample) => number): number {
  return median(roundRatios(a, b, f));
}

/** Anything but the expected status, or any error, as one line per offending run. */
export function unexpected(v: Variant, s: Sample): string | undefined {
  const others = Object.entries(s.result.statusCodes).filter(([code]) => Number(code) !== v.expect);
  if (others.length === 0 && s.result.errors === 0) return undefined;
  return `${v.label}: ${others.map(([c, n]) => `${n} × ${c}`).join(', ')}${s.result.errors ? ` ${s.result.errors} errors/timeouts` : ''} (expected only ${v.expect})`;
}

/** A load generator that saturates a variant for a while (bench/http/loadgen.ts through its pin). */
interface Saturator {
  call(
    command: 'saturate',
    spec: { port: number; requests: Variant['requests']; connections: number; durationS: number },
  ): Promise<LoadResult>;
}

/**
 * Saturation rounds as the variant benchmarks run them: each variant warmed up for `warmS`, then
 * `rounds` × `runS` (order rotated, 1 s to settle), a progress line per run on stderr and a WARNING
 * for any unexpected status.
 */
export async function saturateRounds(
  loadgen: Saturator,
  variants: readonly Variant[],
  o: {
    readonly rounds: number;
    readonly runS: number;
    readonly warmS: number;
    readonly connections: number;
    readonly labelWidth: number;
    readonly cpuDigits: number;
  },
): Promise<Map<string, Sample[]>> {
  const spec = (v: Variant, durationS: number) => ({ port: v.port, requests: v.requests, connections: o.connections, durationS });
  process.stderr.write('warming up\n');
  for (const v of variants) await loadgen.call('saturate', spec(v, o.warmS));
  return measureRounds(
    variants,
    o.rounds,
    o.runS,
    1,
    (v, s) => loadgen.call('saturate', spec(v, s)),
    (v, round, s) => {
      process.stderr.write(
        `  round ${round + 1}/${o.rounds}  ${v.label.padEnd(o.labelWidth)} ${fmt(s.result.rps).padStart(7)} req/s  ${fmt(s.cpuUsPerResponse, o.cpuDigits)} µs CPU/req\n`,
      );
      const wrong = unexpected(v, s);
      if (wrong) console.log(`WARNING ${wrong}`);
    },
  );
}
