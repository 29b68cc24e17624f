// What the propagation benchmark must undo however it ends: OPA processes, the service and temporary
// folders. Undo steps run last-registered first: on a normal end, on a failure, on an uncaught error
// and on SIGINT, SIGTERM or SIGHUP (Node's default for those would exit at once). An orphaned OPA
// does not stop by itself: it lives until its next log line meets the closed pipe, which with plain
// polling can be a minute away. So, last of all, whatever child process is still there at exit is
// killed by its pid.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';

type Undo = () => Promise<void>;

const steps: Undo[] = [];
/** Folders to remove synchronously at exit if the undo steps never ran (a crash). */
const folders = new Set<string>();
let running: Promise<void> | undefined;

/** Registers a step to run at cleanup. Steps must be safe to run after the thing is already gone. */
export function onCleanup(undo: Undo): void {
  steps.push(undo);
}

/** Registers a folder the steps remove; if they never ran, it is removed at exit anyway. */
export function removeAtExit(dir: string): void {
  folders.add(dir);
}

/** Runs every registered step once, newest first; a failing step is reported and the rest still run. */
export function cleanUp(): Promise<void> {
  running ??= (async () => {
    for (let undo = steps.pop(); undo !== undefined; undo = steps.pop()) {
      try {
        await undo();
      } catch (err) {
        process.stderr.write(`cleanup step failed: ${String(err)}\n`);
      }
    }
  })();
  return running;
}

/** This process's child processes, by pid (pgrep -P); none when pgrep finds none or is missing. */
function children(): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\n')
      .filter((l) => l !== '')
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  } catch {
    return [];
  }
}

const SIGNALS = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;

/** Cleans up on a terminating signal or an uncaught error, and kills leftover children at exit. */
export function cleanUpOnExit(): void {
  for (const [name, number] of Object.entries(SIGNALS)) {
    process.once(name, () => {
      process.stderr.write(`${name}: stopping the OPAs and the service, removing temporary folders\n`);
      void cleanUp().finally(() => process.exit(128 + number));
    });
  }
  const crash = (err: unknown): void => {
    process.stderr.write(`FAILED (uncaught): ${err instanceof Error ? err.stack : String(err)}\n`);
    void cleanUp().finally(() => process.exit(1));
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  process.on('exit', () => {
    for (const pid of children()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });
}
