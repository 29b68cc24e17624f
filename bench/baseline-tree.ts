// BENCH_BASELINE: another checkout whose src/ a benchmark runs beside this tree's, for ratios in one run.
// Read and checked once here, so a wrong path stops the benchmark with the reason (exit 2) before it
// measures anything, instead of failing mid-run with a spawn error.
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The checkout named by BENCH_BASELINE, made absolute; undefined when unset; exits 2 when unusable. */
export function baselineTree(needs: readonly string[] = ['src/cli.ts']): string | undefined {
  const given = process.env['BENCH_BASELINE'];
  if (!given) return undefined;
  const root = resolve(given);
  const missing = [...needs, 'node_modules'].filter((p) => !existsSync(join(root, p)));
  const problem =
    !existsSync(root) || !statSync(root).isDirectory()
      ? 'is not a folder'
      : missing.length > 0
        ? `has no ${missing.join(', ')}`
        : undefined;
  if (problem === undefined) return root;
  process.stderr.write(
    `BENCH_BASELINE=${given} ${problem}: give a checkout of this project with its node_modules (e.g. git worktree add --detach ../before <commit>; ln -s "$PWD/node_modules" ../before/node_modules)\n`,
  );
  process.exit(2);
}
