// When the folder source scans: one scan at a time (a change during a scan asks for one more), after
// a debounced folder change, and at the earliest time a settling file or an unconfirmed deletion
// asked for; stop() ends all of it.
import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from 'pino';

/** The scans of one folder source. */
export interface Scheduler {
  /** Scans now, or once more after the scan under way; resolves when that scan is done. */
  rescan(): Promise<void>;
  /** A rescan `delayMs` from now (the earliest asked for wins). */
  scheduleRescan(delayMs: number): void;
  /** Rescans after every change of the folder (debounced). */
  watch(): void;
  stop(): void;
}

/** Runs `scan` as the Scheduler says; `clock` gives milliseconds since the epoch. */
export function createScheduler(o: {
  readonly dir: string;
  readonly log: Logger;
  readonly clock: () => number;
  readonly debounceMs: number;
  readonly scan: () => Promise<void>;
}): Scheduler {
  let scanning: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let watcher: FSWatcher | undefined;
  let debounceTimer: NodeJS.Timeout | undefined;
  let recheckTimer: NodeJS.Timeout | undefined;
  let recheckAt = Infinity;

  async function rescan(): Promise<void> {
    if (stopped) return;
    if (scanning) {
      again = true;
      return scanning;
    }
    scanning = (async () => {
      try {
        do {
          again = false;
          await o.scan();
        } while (again);
      } finally {
        scanning = undefined;
      }
    })();
    return scanning;
  }
  const rescanLogged = (): void => {
    rescan().catch((err: unknown) => o.log.error({ err, dir: o.dir }, 'Failed to read the manifests folder'));
  };

  return {
    rescan,
    scheduleRescan(delayMs) {
      const at = o.clock() + delayMs;
      if (recheckTimer && recheckAt <= at) return;
      if (recheckTimer) clearTimeout(recheckTimer);
      recheckAt = at;
      recheckTimer = setTimeout(
        () => {
          recheckTimer = undefined;
          recheckAt = Infinity;
          rescanLogged();
        },
        Math.max(0, delayMs),
      );
      recheckTimer.unref();
    },
    watch() {
      const schedule = (): void => {
        if (debounceTimer) clearTimeout(debounceTimer);
        debounceTimer = setTimeout(() => {
          debounceTimer = undefined;
          rescanLogged();
        }, o.debounceMs);
      };
      watcher = watch(o.dir, { recursive: true }, schedule);
      watcher.on('error', (err) => o.log.error({ err, dir: o.dir }, 'Stopped watching the manifests folder'));
    },
    stop() {
      stopped = true;
      watcher?.close();
      if (debounceTimer) clearTimeout(debounceTimer);
      if (recheckTimer) clearTimeout(recheckTimer);
    },
  };
}
