// The folder source: every YAML document under a folder, re-read when the folder changes. It keys
// objects, gives them a generation (+1 when the spec changes, remembered in the state folder) and
// enqueues what changed; the controllers do the rest, exactly as with the Kubernetes source.
// Files are read and parsed in a background thread (reader.ts); a file's new content is used only
// once it has held still for the settle interval, so a file caught mid-write never applies.
// This file puts the parts together: view.ts (what is held), scan.ts (one read of the folder),
// settle.ts (when a file's content is used), apply.ts (a scan put in force), schedule.ts (when to scan).
import type { Logger } from 'pino';
import { keyText, type ClusterWriter, type ObjectKey, type ObjectReader } from '../controller/index.ts';
import { createSlicer, type Slicer } from '../work/index.ts';
import { applyScan } from './apply.ts';
import type { ManifestOrigin } from './edit.ts';
import type { DocumentProblem } from './objects.ts';
import type { ManifestReader } from './reader.ts';
import { scanFolder } from './scan.ts';
import { createScheduler, type Scheduler } from './schedule.ts';
import type { StateFolder } from './state.ts';
import { emptyView, type HeldIndex, heldFromState, indexHeld, keyOf, type SourceView, toSource } from './view.ts';

export interface FolderSource extends ObjectReader {
  /** Reads the folder, waiting for files still being written to settle, and enqueues every key. */
  start(): Promise<void>;
  rescan(): Promise<void>;
  /** Re-reads the folder after every change (debounced), and every `rescanMs` in any case. */
  watch(): void;
  /** Folders watched now (0 before watch()). */
  watched(): number;
  stop(): void;
  problems(): readonly DocumentProblem[];
  /**
   * Where an object in force was read: its manifest file (relative to the folder) and document
   * (1-based); document 0 when it is held from the state folder because its file did not read.
   */
  origin(key: ObjectKey): ManifestOrigin | undefined;
  /** Files whose newest content waits to hold still for the settle interval. */
  settling(): readonly string[];
  readonly writer: ClusterWriter;
}

export interface FolderSourceOptions {
  readonly dir: string;
  readonly state: StateFolder;
  readonly log: Logger;
  readonly enqueue: (key: ObjectKey) => void;
  /** Reads and parses a file (a background thread in the service). */
  readonly reader: ManifestReader;
  /** A change is read at most this long after it is seen (default 50 ms). */
  readonly debounceMs?: number;
  /** The folder is read again this often even when no change was seen (default 10 s; 0: never). */
  readonly rescanMs?: number;
  /**
   * An object missing from a scan is deleted only when a scan this much later still misses it (a
   * file moved or renamed in two steps).
   */
  readonly confirmDeleteMs?: number;
  /** A file changed less than this before a scan is read again even if its stat looks unchanged. */
  readonly racyWindowMs?: number;
  /**
   * A file's new content is used once two reads at least this far apart found the same bytes
   * (at start, a file last modified this long ago is used at once). 0: used when first read.
   */
  readonly settleMs?: number;
  /**
   * Milliseconds since the epoch: the only time the folder source reads (settling, confirm-delete,
   * rescans); the real clock (Date.now) by default.
   */
  readonly clock?: () => number;
  /** Gives the event loop back while a scan goes through thousands of objects. */
  readonly slicer?: Slicer;
  /** Every scan passes over every object, even when no file changed (the cold path the equivalence tests compare with). */
  readonly alwaysWhole?: boolean;
}

/** How long a file's content must hold still before it is used (a writer pausing 200 ms between pieces is caught). */
export const DEFAULT_SETTLE_MS = 300;
/** A change is read this long after the first sign of it: a checkout of many files is read once, not per file. */
const DEFAULT_DEBOUNCE_MS = 50;
/** A net under the watcher: a network filesystem tells no change, and a folder past inotify's limit is not watched. */
const DEFAULT_RESCAN_MS = 10_000;

/** A folder source over `options.dir`; nothing is read until start(). */
export function createFolderSource(options: FolderSourceOptions): FolderSource {
  const { state } = options;
  const clock = options.clock ?? Date.now;
  const scheduler = createScheduler({
    dir: options.dir,
    log: options.log,
    clock,
    debounceMs: options.debounceMs ?? DEFAULT_DEBOUNCE_MS,
    periodMs: options.rescanMs ?? DEFAULT_RESCAN_MS,
    scan: async () => {
      const scanned = await scanFolder(view);
      await applyScan(view, scanned);
      return scanned.folders;
    },
  });
  const view = emptyView(
    {
      dir: options.dir,
      state,
      log: options.log,
      enqueue: options.enqueue,
      reader: options.reader,
      clock,
      settleMs: options.settleMs ?? DEFAULT_SETTLE_MS,
      confirmDeleteMs: options.confirmDeleteMs ?? 1000,
      racyWindowMs: options.racyWindowMs ?? 2000,
      slicer: options.slicer ?? createSlicer(),
      scheduleRescan: scheduler.scheduleRescan,
    },
    options.alwaysWhole,
  );
  let index: { readonly held: SourceView['held']; readonly byKind: HeldIndex } | undefined;
  return {
    get(kind, namespace, name) {
      const h = view.held.get(keyText({ kind, namespace, name }));
      return h ? toSource(state, h) : undefined;
    },
    list(kind, namespace) {
      // The view is replaced, never changed in place, by a scan: its index is made once per scan.
      if (index?.held !== view.held) index = { held: view.held, byKind: indexHeld(view.held) };
      return (index.byKind.get(namespace === undefined ? kind : `${kind}/${namespace}`) ?? []).map((h) => toSource(state, h));
    },
    start: () => startSource(view, scheduler),
    rescan: scheduler.rescan,
    watch: scheduler.watch,
    watched: scheduler.watched,
    stop: scheduler.stop,
    problems: () => view.problems,
    origin(key) {
      const h = view.held.get(keyText(key));
      return h ? { source: h.object.source, document: h.object.document } : undefined;
    },
    settling: () => view.settlingFiles,
    writer: stateWriter(state),
  };
}

/** Reads the folder, waiting for files still being written to settle, and enqueues every key. */
async function startSource(v: SourceView, scheduler: Scheduler): Promise<void> {
  await v.state.load();
  // Start from what the folder held before the restart: a file that no longer parses keeps its
  // objects, and an object deleted while we were down is deleted like any other.
  v.held = new Map(v.state.objects().map((o) => [keyText(o), heldFromState(o)]));
  await scheduler.rescan();
  // Files still being written when we start are waited for (a few settle intervals at most).
  for (let round = 0; v.settlingFiles.length > 0 && round < 20; round++) {
    await new Promise((resolve) => {
      setTimeout(resolve, Math.max(v.settleMs, 50));
    });
    await scheduler.rescan();
  }
  if (v.settlingFiles.length > 0)
    v.log.warn({ files: v.settlingFiles }, 'Started before these manifest files held still; they apply once they do');
  // The store is empty at start: every object is reconciled once.
  for (const h of v.held.values()) v.enqueue(keyOf(h));
}

/** Status, token Secrets and token files go to the state folder, where the API server would keep them. */
function stateWriter(state: StateFolder): ClusterWriter {
  return {
    readTokenSecret: (namespace, connector) => state.tokenSecret(namespace, connector),
    writeTokenSecret: (owner, secret) => state.writeTokenSecret(owner, secret),
    deleteTokenSecret: (namespace, connector) => state.deleteTokenSecret(namespace, connector),
    writeStatus: (key, status) => state.saveStatus(key.kind, key.namespace, key.name, status),
  };
}
