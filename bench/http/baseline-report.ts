// The comparison with BENCH_BASELINE's tree, printed: for each compared path, this tree / baseline
// per round, as the median and the lowest and highest round, so a reader sees both the result and
// how far identical work moved between rounds on this machine (the noise).
import { baselineKey, comparedKeys } from './baseline.ts';
import { fmt, table } from './report.ts';
import { median, roundRatios, type Sample, type Variant } from './rounds.ts';

const spread = (xs: readonly number[]): string => `${fmt(median(xs), 2)} (${fmt(Math.min(...xs), 2)}-${fmt(Math.max(...xs), 2)})`;

/** Within noise: the rounds' ratios of req/s at saturation straddle 1.00. */
function verdict(rps: readonly number[]): string {
  if (Math.min(...rps) <= 1 && Math.max(...rps) >= 1) return 'within noise';
  return median(rps) > 1 ? 'faster in every round' : 'slower in every round';
}

/**
 * One table: req/s and CPU per request at saturation, CPU per request and p99 at the fixed load,
 * each as this tree / baseline, then how much the raw echo itself moved between rounds.
 */
export function baselineLines(
  variants: readonly Variant[],
  saturated: ReadonlyMap<string, readonly Sample[]>,
  paced: ReadonlyMap<string, readonly Sample[]>,
  rate: number,
): string[] {
  const of = (m: ReadonlyMap<string, readonly Sample[]>, key: string): readonly Sample[] => m.get(key) ?? [];
  const rps = (s: Sample): number => s.result.rps;
  const cpu = (s: Sample): number => s.cpuUsPerResponse;
  const p99 = (s: Sample): number => s.result.p99Ms;
  const rows = variants
    .filter((v) => comparedKeys.includes(v.key) && saturated.has(baselineKey(v.key)))
    .map((v) => {
      const twin = baselineKey(v.key);
      const satRps = roundRatios(of(saturated, v.key), of(saturated, twin), rps);
      const pacedP99 = (key: string): string => fmt(median(of(paced, key).map(p99)), 2);
      return [
        v.label,
        spread(satRps),
        spread(roundRatios(of(saturated, v.key), of(saturated, twin), cpu)),
        paced.has(twin) ? spread(roundRatios(of(paced, v.key), of(paced, twin), cpu)) : '-',
        paced.has(twin) ? `${pacedP99(v.key)} / ${pacedP99(twin)} ms` : '-',
        verdict(satRps),
      ];
    });
  const raw = of(saturated, 'raw').map(rps);
  const rawMedian = median(raw);
  return [
    ...table(['path', 'req/s, saturation', 'CPU/req, saturation', `CPU/req, ${fmt(rate)} req/s`, `p99, ${fmt(rate)} req/s`, ''], rows),
    '(this tree / baseline: the median of the per-round ratios, in parentheses the lowest and highest round; req/s above 1',
    ' or CPU/req below 1 means this tree is faster. "within noise": some rounds favour one tree, some the other.',
    ` The raw echo, the same code in every round, ranged ${fmt(Math.min(...raw))}-${fmt(Math.max(...raw))} req/s,`,
    ` ${fmt((100 * (Math.min(...raw) - rawMedian)) / rawMedian, 1)}% to +${fmt((100 * (Math.max(...raw) - rawMedian)) / rawMedian, 1)}% around its median.)`,
  ];
}
