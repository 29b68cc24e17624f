// Start to ready in standalone mode, this tree against another checkout in the same run (issue 26):
//   BENCH_BASELINE=<checkout> node bench/standalone-start.ts
// Each round starts bench/http/servers/service.ts --rules 10000 (the service over a folder of one
// tenant's 10,000 generated rules) of both trees in turn, the order alternating, pinned to one core.
// Figures: the start time the service reports (startService called to resolved) and its CPU time
// when ready (/proc); ratios are this tree's medians over the baseline's. BENCH_ROUNDS (default 3).
import { join } from 'node:path';
import { ROOT } from '../test/support/kube.ts';
import { SERVER_CORE } from './http/cores.ts';
import { spawnPinned } from './http/ipc.ts';
import { processCpuUs } from './http/procfs.ts';
import { baselineTree } from './baseline-tree.ts';
import { fmt, machine, table } from './http/report.ts';

const BASELINE = baselineTree(['bench/http/servers/service.ts']);
if (!BASELINE) {
  process.stderr.write('usage: BENCH_BASELINE=<checkout to compare with> node bench/standalone-start.ts\n');
  process.exit(2);
}
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const RULES = 10_000;
const SCRIPT = join('bench', 'http', 'servers', 'service.ts');

const median = (xs: readonly number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? (v[m] as number) : ((v[m - 1] as number) + (v[m] as number)) / 2;
};

interface Start {
  readonly readyMs: number;
  readonly cpuMs: number;
}

async function start(tree: string): Promise<Start> {
  const child = await spawnPinned<Record<string, never>, { startMs: number }>(
    SERVER_CORE,
    join(tree, SCRIPT),
    ['--rules', String(RULES)],
    [],
    tree,
  );
  const cpuMs = (await processCpuUs(child.pid)) / 1000;
  await child.stop();
  return { readyMs: child.ready.startMs, cpuMs };
}

const trees = { this: ROOT, baseline: BASELINE } as const;
const results: Record<keyof typeof trees, Start[]> = { this: [], baseline: [] };
console.log(`acl-operator standalone start to ready, ${new Date().toISOString()}; this tree ${ROOT}, baseline ${BASELINE}`);
console.log(`machine: ${machine()}`);
for (let round = 0; round < ROUNDS; round++) {
  for (const tree of round % 2 === 0 ? (['baseline', 'this'] as const) : (['this', 'baseline'] as const)) {
    const r = await start(trees[tree]);
    results[tree].push(r);
    process.stderr.write(`  round ${round + 1}, ${tree}: ready ${fmt(r.readyMs)} ms, CPU ${fmt(r.cpuMs)} ms\n`);
  }
}
const rows = (['baseline', 'this'] as const).map((tree) => {
  const rs = results[tree];
  const med = (f: (r: Start) => number): number => median(rs.map(f));
  const ratio = (f: (r: Start) => number): string => (tree === 'this' ? fmt(med(f) / median(results.baseline.map(f)), 2) : '');
  return [
    `${fmt(RULES)} rules in one tenant: ${tree}`,
    `${fmt(med((r) => r.readyMs))} ms (${rs.map((r) => fmt(r.readyMs)).join(', ')})`,
    `${fmt(med((r) => r.cpuMs))} ms (${rs.map((r) => fmt(r.cpuMs)).join(', ')})`,
    ratio((r) => r.readyMs),
    ratio((r) => r.cpuMs),
  ];
});
console.log('');
for (const l of table(['', 'startService to ready (median; each)', 'CPU when ready (process)', 'ready / baseline', 'CPU / baseline'], rows))
  console.log(`  ${l}`);
