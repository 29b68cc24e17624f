// Printing: the machine, tables of medians, and one line per target. Benchmarks are not gates: a
// missed target is printed as MISS and the exit code stays 0.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, release, totalmem } from 'node:os';

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '-';

export const kb = (bytes: number): string => `${fmt(bytes / 1024, 1)} KB`;

/** Soft and hard limits on open files, as the children inherit them (Node raises soft to hard). */
export function fileLimits(): { soft: number; hard: number } {
  const [soft, hard] = execFileSync('sh', ['-c', 'ulimit -Sn; ulimit -Hn'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => (l === 'unlimited' ? Infinity : Number(l)));
  return { soft: soft ?? 0, hard: hard ?? 0 };
}

export function machine(): string {
  const model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown CPU';
  const { soft, hard } = fileLimits();
  return `${model}, ${availableParallelism()} cores, ${fmt(totalmem() / 2 ** 30)} GiB, Linux ${release()}, Node ${process.version}, open files ${soft}/${hard}`;
}

/** Columns padded to their widest cell; the first column left-aligned, the rest right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

export interface Target {
  /** undefined: not measured in this run (said why in `measured`). */
  readonly met: boolean | undefined;
  readonly what: string;
  readonly measured: string;
  readonly target: string;
}

export function targetLines(targets: readonly Target[]): string[] {
  const label = (t: Target): string => (t.met === undefined ? 'n/a ' : t.met ? 'PASS' : 'MISS');
  return table(
    ['', 'target', 'measured', 'wanted'],
    targets.map((t) => [label(t), t.what, t.measured, t.target]),
  );
}
