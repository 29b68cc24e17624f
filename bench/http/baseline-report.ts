// The comparison with BENCH_BASELINE's tree, printed: for each compared path, this tree / baseline
// per round, as the median and the lowest and highest round, so a reader sees both the result and
// how far identical work moved between rounds on this machine (the noise).
import { baselineKey, comparedKeys } from './baseline.ts';
import { fmt, table } from './report.ts';
import { median, roundRatios, type Sample, type Variant } from './rounds.ts';

const spread = (xs: readonly number[]): string => `${fmt(median(xs), 2)} (${fmt(Math.min(...xs), 2)}-${fmt(Math.max(...xs), 2)})`;

interface Compared {
  readonly name: string;
  /** This tree / baseline, one per round. */
  readonly ratios: readonly number[];
  readonly higherIsBetter: boolean;
}

/** Within noise: the rounds straddle 1.00 (some favour one tree, some the other) for every measure. */
function verdict(measures: readonly Compared[]): string {
  const outside = measures.filter((m) => m.ratios.length > 0 && (Math.min(...m.ratios) > 1 || Math.max(...m.ratios) < 1));
  if (outside.length === 0) return 'within noise';
  const side = (m: Compared): string => (median(m.ratios) > 1 === m.higherIsBetter ? 'better' : 'worse');
  return `${outside.map((m) => `${m.name} ${side(m)}`).join(', ')} in every round`;
}

/**
 * One table: req/s and CPU per request at saturation, CPU per request and p99 (medians, not a ratio)
 * at the fixed load, each as this tree / baseline, then how much the raw echo moved between rounds.
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
      const measures: Compared[] = [
        { name: 'req/s', ratios: roundRatios(of(saturated, v.key), of(saturated, twin), rps), higherIsBetter: true },
        { name: 'CPU/req', ratios: roundRatios(of(saturated, v.key), of(saturated, twin), cpu), higherIsBetter: false },
        { name: 'CPU/req at fixed load', ratios: roundRatios(of(paced, v.key), of(paced, twin), cpu), higherIsBetter: false },
      ];
      const pacedP99 = (key: string): string => fmt(median(of(paced, key).map(p99)), 2);
      return [
        v.label,
        ...measures.map((m) => (m.ratios.length > 0 ? spread(m.ratios) : '-')),
        paced.has(twin) ? `${pacedP99(v.key)} / ${pacedP99(twin)} ms` : '-',
        verdict(measures),
      ];
    });
  const raw = of(saturated, 'raw').map(rps);
  const rawMedian = median(raw);
  return [
    ...table(
      ['path', 'req/s, saturation', 'CPU/req, saturation', `CPU/req, ${fmt(rate)} req/s`, `p99, ${fmt(rate)} req/s`, 'verdict'],
      rows,
    ),
    '(this tree / baseline: the median of the per-round ratios, in parentheses the lowest and highest round; req/s above 1',
    ' or CPU/req below 1 means this tree is faster. "within noise": for each ratio, some rounds favour one tree and some',
    ' the other. CPU/req at the fixed load moves least between rounds; req/s at saturation follows the share of the core',
    ' that other processes left the server.',
    ` The raw echo, the same code in every round, ranged ${fmt(Math.min(...raw))}-${fmt(Math.max(...raw))} req/s,`,
    ` ${fmt((100 * (Math.min(...raw) - rawMedian)) / rawMedian, 1)}% to +${fmt((100 * (Math.max(...raw) - rawMedian)) / rawMedian, 1)}% around its median.)`,
  ];
}
