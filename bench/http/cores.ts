import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

// The two cores of the benchmark: every server variant runs on one, the load generator (and the
// benchmark's own process) on the other, so a server never shares its core with its load.
export const SERVER_CORE = 0;
export const LOADGEN_CORE = 1;

/**
 * Moves this process (which only starts runs and collects figures) to the load core, so it never
 * competes with a server. Without two cores and taskset (util-linux) there is nothing to pin: the
 * benchmark says so and exits 0.
 */
export function pinToLoadCore(what = 'the server and the load generator'): void {
  const hasTaskset = ((): boolean => {
    try {
      execFileSync('taskset', ['-V'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  if (availableParallelism() < 2 || !hasTaskset) {
    console.log(`skipped: ${what} need a core each (2 or more cores) and taskset (util-linux) to pin them`);
    process.exit(0);
  }
  execFileSync('taskset', ['-a', '-cp', String(LOADGEN_CORE), String(process.pid)], { stdio: 'ignore' });
}
