// What tells the folder source that something under the manifests folder changed: one plain
// (non-recursive) watch per folder that decides what is read (walk.ts names them), kept in step with
// the folder after every scan. A watch on a folder reports every change of its entries, whatever
// happened to them: written in place, truncated, renamed over, unlinked and created again.
//
// Node's `fs.watch(dir, { recursive: true })` does not, on Linux: it watches each file's inode by its
// path and drops the folder's events for paths it already knows, so once a file is replaced by a
// rename (`mv`, an editor's atomic save, a GitOps checkout) its watch stays on the old inode and no
// later change of that file is ever reported (issue 23). Watching folders also costs one inotify watch
// per folder instead of one per file.
import { type FSWatcher, watch } from 'node:fs';
import { lstat, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

export interface FolderWatcher {
  /**
   * Watches exactly `folders` (paths as the walk reached them), and the folder holding the manifests
   * folder when that is a link (swapped to another target). A folder whose identity changed (replaced,
   * or a link now leading elsewhere) is watched again. Resolves to whether a watch began: a change made
   * before it began may have been missed, so the caller reads the folder once more.
   */
  sync(folders: readonly string[]): Promise<boolean>;
  /** Folders watched now. */
  size(): number;
  close(): void;
}

export interface FolderWatcherOptions {
  /** The manifests folder, as given. */
  readonly root: string;
  /** Something changed (also when a watch failed: a rescan puts the watches in step again). */
  readonly onChange: () => void;
  /** A folder could not be watched (for instance the inotify limit): its changes wait for the periodic rescan. */
  readonly onFailure: (folder: string, err: Error) => void;
}

interface Watching {
  /** `dev:ino` of the folder the watch is on. */
  readonly identity: string;
  readonly watcher: FSWatcher;
}

const identityOf = (s: { dev: number; ino: number }): string => `${s.dev}:${s.ino}`;

/** A watcher of nothing yet; `sync` sets what it watches. */
export function createFolderWatcher(o: FolderWatcherOptions): FolderWatcher {
  const watching = new Map<string, Watching>();
  /** Folders that failed to be watched, by identity: said once, not at every scan. */
  const failed = new Map<string, string>();
  let closed = false;

  const unwatch = (path: string): void => {
    watching.get(path)?.watcher.close();
    watching.delete(path);
  };

  /** Starts a watch on `path` (identity `identity`); only events naming `only` count when given. */
  const begin = (path: string, identity: string, only?: string): boolean => {
    let watcher: FSWatcher;
    try {
      watcher = watch(path, { persistent: false }, (_event, name) => {
        if (only === undefined || name === null || name === only) o.onChange();
      });
    } catch (err) {
      // ENOENT: gone since the walk; the next scan says so. Anything else (ENOSPC: inotify's limit) is said once.
      const e = err instanceof Error ? err : new Error(String(err));
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' && failed.get(path) !== identity) {
        failed.set(path, identity);
        o.onFailure(path, e);
      }
      return false;
    }
    failed.delete(path);
    watcher.on('error', () => {
      // The folder went away under its watch (removed, unmounted): a rescan watches what is there now.
      if (watching.get(path)?.watcher === watcher) unwatch(path);
      watcher.close();
      o.onChange();
    });
    watching.set(path, { identity, watcher });
    return true;
  };

  /** The watches `path` needs: itself, and with `only` its parent when `path` is a link. */
  const wanted = async (folders: readonly string[]): Promise<Map<string, { identity: string; only?: string }>> => {
    const want = new Map<string, { identity: string; only?: string }>();
    for (const folder of folders) {
      const s = await stat(folder).catch(() => undefined);
      if (s?.isDirectory()) want.set(folder, { identity: identityOf(s) });
    }
    // A manifests folder that is a link (a release directory swapped by a deploy) changes by a rename
    // in the folder that holds it; only events naming the link count there.
    const link = await lstat(o.root).catch(() => undefined);
    if (link?.isSymbolicLink()) {
      const parent = dirname(o.root);
      const s = await stat(parent).catch(() => undefined);
      if (s && !want.has(parent)) want.set(parent, { identity: `${identityOf(s)}:${basename(o.root)}`, only: basename(o.root) });
    }
    return want;
  };

  const syncNow = async (folders: readonly string[]): Promise<boolean> => {
    if (closed) return false;
    const want = await wanted(folders);
    if (closed) return false;
    let began = false;
    for (const path of [...watching.keys()]) if (watching.get(path)?.identity !== want.get(path)?.identity) unwatch(path);
    for (const [path, w] of want) if (!watching.has(path) && begin(path, w.identity, w.only)) began = true;
    return began;
  };
  // One sync at a time: two at once would both begin the same watch.
  let last: Promise<unknown> = Promise.resolve();

  return {
    sync(folders) {
      const next = last.then(() => syncNow(folders));
      last = next.catch(() => undefined);
      return next;
    },
    size: () => watching.size,
    close() {
      closed = true;
      for (const path of [...watching.keys()]) unwatch(path);
    },
  };
}
