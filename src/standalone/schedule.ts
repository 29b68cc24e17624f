// When the folder source scans: one scan at a time (a change during a scan asks for one more), soon
// after the folder changes (watch.ts tells), at the earliest time a settling file or an unconfirmed
// deletion asked for, and every so often anyway; stop() ends all of it.
import type { Logger } from 'pino';
import { coalesce } from '../work/index.ts';
import { createFolderWatcher, type FolderWatcher } from './watch.ts';

/** The scans of one folder source. */
export interface Scheduler {
  /** Scans now, or once more after the scan under way; resolves when that scan is done. */
  rescan(): Promise<void>;
  /** A rescan `delayMs` from now (the earliest asked for wins). */
  scheduleRescan(delayMs: number): void;
  /** Rescans after every change of the folder, and every `periodMs` (when above 0) in case a change was not told. */
  watch(): void;
  /** Folders watched now. */
  watched(): number;
  stop(): void;
}

/** Runs `scan` as the Scheduler says; `clock` gives milliseconds since the epoch. */
export function createScheduler(o: {
  readonly dir: string;
  readonly log: Logger;
  readonly clock: () => number;
  /** A change is read at most this long after it was told (a burst of changes is read once). */
  readonly debounceMs: number;
  /** A rescan this often even when no change was told (0: never): network filesystems tell nothing. */
  readonly periodMs: number;
  /** Reads the folder once; resolves to the folders whose changes matter (walk.ts). */
  readonly scan: () => Promise<readonly string[]>;
}): Scheduler {
  let stopped = false;
  let watcher: FolderWatcher | undefined;
  let periodTimer: NodeJS.Timeout | undefined;
  let debounceTimer: NodeJS.Timeout | undefined;
  let recheckTimer: NodeJS.Timeout | undefined;
  let recheckAt = Infinity;
  /** The folders the last scan named. */
  let folders: readonly string[] = [];

  /** A rescan soon: the first change of a burst sets the time, later ones do not push it back. */
  const changed = (): void => {
    if (stopped || debounceTimer) return;
    debounceTimer = setTimeout(() => {
      debounceTimer = undefined;
      rescanLogged();
    }, o.debounceMs);
    debounceTimer.unref();
  };

  /** Watches what the last scan named; a folder watched only from now on may have changed since the walk read it. */
  async function syncWatches(): Promise<void> {
    if (watcher && (await watcher.sync(folders))) changed();
  }

  async function scanOnce(): Promise<void> {
    folders = await o.scan();
    await syncWatches();
  }

  // Rescans asked for while one runs collapse into one more after it (none once stopped).
  const scanAgain = coalesce(scanOnce, () => !stopped);
  async function rescan(): Promise<void> {
    if (stopped) return;
    return scanAgain();
  }
  function rescanLogged(): void {
    rescan().catch((err: unknown) => o.log.error({ err, dir: o.dir }, 'Failed to read the manifests folder'));
  }

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
      if (stopped || watcher) return;
      watcher = createFolderWatcher({
        root: o.dir,
        onChange: changed,
        onFailure: (folder, err) =>
          o.log.warn(
            { err, folder, rescanSeconds: o.periodMs / 1000 },
            'Failed to watch a manifests folder; its changes are read at the next periodic rescan',
          ),
      });
      if (o.periodMs > 0) {
        periodTimer = setInterval(rescanLogged, o.periodMs);
        periodTimer.unref();
      }
      syncWatches().catch((err: unknown) => o.log.error({ err, dir: o.dir }, 'Failed to watch the manifests folder'));
    },
    watched: () => watcher?.size() ?? 0,
    stop() {
      stopped = true;
      watcher?.close();
      if (periodTimer) clearInterval(periodTimer);
      if (debounceTimer) clearTimeout(debounceTimer);
      if (recheckTimer) clearTimeout(recheckTimer);
    },
  };
}
