// The folder source: every YAML document under a folder, re-read when the folder changes. It keys
// objects, gives them a generation (+1 when the spec changes, remembered in the state folder) and
// enqueues what changed; the controllers do the rest, exactly as with the Kubernetes source.
// Files are read and parsed in a background thread (reader.ts); a file's new content is used only
// once it has held still for the settle interval, so a file caught mid-write never applies.
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { relative } from 'node:path';
import type { Logger } from 'pino';
import { canonicalJson } from '../bundle/index.ts';
import { keyText, type ClusterWriter, type ObjectKey, type ObjectReader, type SourceObject } from '../controller/index.ts';
import { createSlicer, type Slicer } from '../work/slice.ts';
import type { DocumentProblem, ReadObject } from './objects.ts';
import { fingerprintOf, type ManifestRead, type ParsedObject } from './parse.ts';
import type { ManifestReader } from './reader.ts';
import { stripInternal } from './state-objects.ts';
import type { ObjectState, StateFolder } from './state.ts';
import { walkManifests } from './walk.ts';

/** An object as the source holds it, with the generation the API server would have given it. */
interface Held {
  /** keyText of the object. */
  readonly key: string;
  readonly object: ReadObject;
  readonly fingerprint: string;
  readonly generation: number;
  readonly specDigest: string;
}

export interface FolderSource extends ObjectReader {
  /** Reads the folder, waiting for files still being written to settle, and enqueues every key. */
  start(): Promise<void>;
  rescan(): Promise<void>;
  /** Re-reads the folder after every change (debounced). */
  watch(): void;
  stop(): void;
  problems(): readonly DocumentProblem[];
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
  readonly debounceMs?: number;
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
  /** Milliseconds since the epoch (settling); Date.now by default. */
  readonly clock?: () => number;
  /** Gives the event loop back while a scan goes through thousands of objects. */
  readonly slicer?: Slicer;
}

/** The racy window on a filesystem whose timestamps have sub-second precision. */
const FINE_RACY_WINDOW_MS = 50;

/** How long a file's content must hold still before it is used (a writer pausing 200 ms between pieces is caught). */
export const DEFAULT_SETTLE_MS = 300;

function heldFromState(s: ObjectState): Held {
  const metadata = stripInternal(s.raw['metadata']);
  const object: ReadObject = { kind: s.kind, metadata, raw: { ...s.raw, metadata }, source: s.source, document: 0 };
  return {
    key: keyText({ kind: s.kind, namespace: metadata.namespace, name: metadata.name }),
    object,
    fingerprint: fingerprintOf(object),
    generation: s.generation,
    specDigest: s.specDigest,
  };
}

/** What the source knows of one file. */
interface FileState {
  /** The last read, reused while the file's stat stays the same and old enough. */
  last: { stamp: string; read: ManifestRead; objects: ParsedObject[] } | undefined;
  /** The hash of the content in force (undefined: none of this run yet). */
  applied: string | undefined;
  /** Content seen but not yet in force, and when it was first seen. */
  pending: { hash: string; sinceMs: number } | undefined;
}

export function createFolderSource(options: FolderSourceOptions): FolderSource {
  const { dir, state, log, enqueue, reader } = options;
  const clock = options.clock ?? Date.now;
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  const confirmDeleteMs = options.confirmDeleteMs ?? 1000;
  const racyWindowMs = options.racyWindowMs ?? 2000;
  const slicer = options.slicer ?? createSlicer();
  let held = new Map<string, Held>();
  const missingSince = new Map<string, number>();
  const fileStates = new Map<string, FileState>();
  /** What each object read was held as, so an unchanged document costs no new objects. */
  const heldOf = new WeakMap<ParsedObject, Held>();
  let problems: DocumentProblem[] = [];
  let settlingFiles: string[] = [];
  let firstScan = true;
  let recheckTimer: NodeJS.Timeout | undefined;
  let recheckAt = Infinity;
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let scanning: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  const keyOf = (h: Held): ObjectKey => ({ kind: h.object.kind, namespace: h.object.metadata.namespace, name: h.object.metadata.name });
  const stateHeld = (o: ReadObject): Held | undefined => {
    const s = o.kind === 'Secret' ? undefined : state.object(o.kind, o.metadata.namespace, o.metadata.name);
    return s ? heldFromState(s) : undefined;
  };
  /** A rescan `delayMs` from now (the earliest asked for wins). */
  const scheduleRescan = (delayMs: number): void => {
    const at = clock() + delayMs;
    if (recheckTimer && recheckAt <= at) return;
    if (recheckTimer) clearTimeout(recheckTimer);
    recheckAt = at;
    recheckTimer = setTimeout(
      () => {
        recheckTimer = undefined;
        recheckAt = Infinity;
        rescan().catch((err: unknown) => log.error({ err, dir }, 'Failed to read the manifests folder'));
      },
      Math.max(0, delayMs),
    );
    recheckTimer.unref();
  };

  /** Reads a file, or reuses the last read when its stat is unchanged and older than the racy window. */
  async function readFile(
    file: string,
    source: string,
    fs: FileState,
    scanStartedMs: number,
  ): Promise<{ read: ManifestRead; objects: ParsedObject[] }> {
    const st = await stat(file);
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    const changedMs = Math.max(st.mtimeMs, st.ctimeMs);
    // Timestamps with a fraction of a second come from a clock fine enough that an unchanged stat
    // means unchanged bytes once a few milliseconds passed; whole seconds may hide a second write.
    const window = st.mtimeMs % 1000 === 0 && st.ctimeMs % 1000 === 0 ? racyWindowMs : Math.min(racyWindowMs, FINE_RACY_WINDOW_MS);
    if (fs.last && fs.last.stamp === stamp && changedMs < scanStartedMs - window) return fs.last;
    const got = await reader.read(file, source);
    fs.last = { stamp, ...got };
    return got;
  }

  /**
   * Whether a file's content, as just read, is used now. It is when it is the content in force, or
   * has held still for the settle interval; otherwise the file keeps what it had.
   */
  function settled(fs: FileState, read: ManifestRead, nowMs: number): boolean {
    if (read.hash === fs.applied) return true;
    if (settleMs === 0) return true;
    if (fs.pending?.hash === read.hash) {
      if (nowMs - fs.pending.sinceMs >= settleMs) return true;
      scheduleRescan(fs.pending.sinceMs + settleMs - nowMs);
      return false;
    }
    // At start, a file nobody touched for the settle interval is as settled as it gets.
    const quietMs = nowMs - Math.max(read.stamp.mtimeMs, read.stamp.ctimeMs);
    if (firstScan && fs.applied === undefined && quietMs >= settleMs) return true;
    fs.pending = { hash: read.hash, sinceMs: nowMs };
    scheduleRescan(settleMs);
    return false;
  }

  async function scan(): Promise<void> {
    const walked = await walkManifests(dir);
    const next = new Map<string, Held>();
    const found: DocumentProblem[] = [...walked.problems];
    /** Files whose objects stay as they were: unreadable, emptied, being written, or not settled. */
    const keep = new Set<string>();
    const settling: string[] = [];
    const scanStartedMs = clock();
    const seen = new Set<string>();
    const heldSources = new Set<string>();
    for (const h of held.values()) heldSources.add(h.object.source);
    for (const file of walked.files) {
      const source = relative(dir, file) || file;
      seen.add(file);
      let fs = fileStates.get(file);
      if (!fs) {
        fs = { last: undefined, applied: undefined, pending: undefined };
        fileStates.set(file, fs);
      }
      let got: { read: ManifestRead; objects: ParsedObject[] };
      try {
        got = await readFile(file, source, fs, scanStartedMs);
      } catch (err) {
        keep.add(source);
        found.push({ source, document: 0, name: undefined, message: `cannot read: ${err instanceof Error ? err.message : String(err)}` });
        continue;
      }
      const { read, objects } = got;
      if (read.changing) {
        keep.add(source);
        settling.push(source);
        scheduleRescan(Math.max(settleMs, 50));
        continue;
      }
      // A file still being written is neither used nor reported: its bytes count once they hold still.
      if (!settled(fs, read, clock())) {
        keep.add(source);
        settling.push(source);
        continue;
      }
      if (read.unreadable) {
        // Nothing is lost to a typo or a limit: the file's objects stay as they were until it is fixed.
        keep.add(source);
        found.push(...read.problems);
        continue;
      }
      if (objects.length === 0 && heldSources.has(source)) {
        // An emptied file (or one left with nothing usable) deletes nothing: removing it does.
        keep.add(source);
        found.push(...read.problems, {
          source,
          document: 0,
          name: undefined,
          message: 'the file holds no objects now: the objects it held stay in force until it is filled again or removed',
        });
        continue;
      }
      if (fs.applied !== read.hash) {
        if (fs.applied !== undefined || !firstScan) log.info({ file: source, objects: objects.length }, 'Read a changed manifest file');
        fs.applied = read.hash;
      }
      fs.pending = undefined;
      found.push(...read.problems);
      for (let i = 0; i < objects.length; i++) {
        if ((i & 255) === 255) {
          const paused = slicer.pause();
          if (paused) await paused;
        }
        const parsed = objects[i] as ParsedObject;
        const same = heldOf.get(parsed);
        // The very document read before (the reader keeps unchanged documents' objects): held as it was.
        if (same && held.get(same.key) === same && !next.has(same.key)) {
          next.set(same.key, same);
          continue;
        }
        const { object, fingerprint, specDigest } = parsed;
        const key = keyText({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name });
        const first = next.get(key);
        if (first) {
          found.push({
            source,
            document: object.document,
            name: object.metadata.name,
            message: `${key} is already defined in ${first.object.source} (document ${first.object.document}); this copy is ignored`,
          });
          continue;
        }
        const known = held.get(key) ?? stateHeld(object);
        // The API server's rule: the generation moves with the spec only, not with labels or annotations.
        const generation = !known ? 1 : known.specDigest === specDigest ? known.generation : known.generation + 1;
        const h: Held = { key, object, fingerprint, generation, specDigest };
        heldOf.set(parsed, h);
        next.set(key, h);
      }
    }
    const goneFiles = [...fileStates.keys()].filter((file) => !seen.has(file));
    for (const file of goneFiles) fileStates.delete(file);
    if (goneFiles.length > 0) await reader.forget(goneFiles);
    const now = clock();
    let recheck = false;
    let visited = 0;
    for (const [key, h] of held) {
      if ((++visited & 255) === 0) {
        const paused = slicer.pause();
        if (paused) await paused;
      }
      if (next.has(key)) {
        missingSince.delete(key);
        continue;
      }
      if (keep.has(h.object.source)) {
        missingSince.delete(key);
        next.set(key, h);
        continue;
      }
      const since = missingSince.get(key) ?? now;
      if (now - since < confirmDeleteMs) {
        missingSince.set(key, since);
        next.set(key, h);
        recheck = true;
      }
    }
    const changed: ObjectKey[] = [];
    for (const [key, h] of next) {
      const before = held.get(key);
      // The same Held (an unchanged document) is unchanged: no strings to compare.
      if (before !== h && (before?.fingerprint !== h.fingerprint || before.generation !== h.generation)) changed.push(keyOf(h));
    }
    const gone: Held[] = [];
    for (const [k, h] of held) if (!next.has(k)) gone.push(h);
    // The new view (objects and generations together) is in place before anything is written or
    // enqueued: a reconcile never mixes two scans.
    held = next;
    firstScan = false;
    for (const h of gone) {
      missingSince.delete(h.key);
      log.info({ kind: h.object.kind, key: h.key }, 'Saw object removed from the manifests folder');
      changed.push(keyOf(h));
    }
    for (const key of changed) {
      const h = held.get(keyText(key));
      if (key.kind === 'Secret') continue;
      if (h === undefined) {
        await state.removeObject(key.kind, key.namespace, key.name);
        continue;
      }
      const known = state.object(key.kind, key.namespace, key.name);
      await state.saveObject({
        kind: key.kind,
        namespace: key.namespace,
        name: key.name,
        generation: h.generation,
        specDigest: h.specDigest,
        source: h.object.source,
        raw: h.object.raw,
        status: known?.status,
      });
    }
    for (const key of changed) enqueue(key);
    if (recheck) scheduleRescan(confirmDeleteMs);
    const before = new Set(problems.map((p) => canonicalJson(p)));
    for (const p of found)
      if (!before.has(canonicalJson(p)))
        log.warn({ file: p.source, document: p.document, name: p.name, problem: p.message }, 'Skipped manifest document');
    if (canonicalJson(found) !== canonicalJson(problems)) await state.writeProblems(found);
    problems = found;
    if (settling.length > 0 && canonicalJson(settling) !== canonicalJson(settlingFiles))
      log.info({ files: settling, settleMs }, 'Waiting for manifest files to hold still before using them');
    settlingFiles = settling;
  }

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
          await scan();
        } while (again);
      } finally {
        scanning = undefined;
      }
    })();
    return scanning;
  }

  const toSource = (h: Held): SourceObject => {
    const { kind } = h.object;
    const { namespace, name } = h.object.metadata;
    const known = kind === 'Secret' ? undefined : state.object(kind, namespace, name);
    const metadata = { ...h.object.metadata, generation: h.generation, uid: `standalone:${kind}/${namespace}/${name}` };
    return { kind, metadata, raw: { ...h.object.raw, metadata, ...(known?.status ? { status: known.status } : {}) } };
  };

  return {
    get(kind, namespace, name) {
      const h = held.get(keyText({ kind, namespace, name }));
      return h ? toSource(h) : undefined;
    },
    list(kind, namespace) {
      return [...held.values()]
        .filter((h) => h.object.kind === kind && (namespace === undefined || h.object.metadata.namespace === namespace))
        .map(toSource);
    },
    async start() {
      await state.load();
      // Start from what the folder held before the restart: a file that no longer parses keeps its
      // objects, and an object deleted while we were down is deleted like any other.
      held = new Map(state.objects().map((o) => [keyText(o), heldFromState(o)]));
      await rescan();
      // Files still being written when we start are waited for (a few settle intervals at most).
      for (let round = 0; settlingFiles.length > 0 && round < 20; round++) {
        await new Promise((resolve) => {
          setTimeout(resolve, Math.max(settleMs, 50));
        });
        await rescan();
      }
      if (settlingFiles.length > 0)
        log.warn({ files: settlingFiles }, 'Started before these manifest files held still; they apply once they do');
      // The store is empty at start: every object is reconciled once.
      for (const h of held.values()) enqueue(keyOf(h));
    },
    rescan,
    watch() {
      const schedule = (): void => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          timer = undefined;
          rescan().catch((err: unknown) => log.error({ err, dir }, 'Failed to read the manifests folder'));
        }, options.debounceMs ?? 100);
      };
      watcher = watch(dir, { recursive: true }, schedule);
      watcher.on('error', (err) => log.error({ err, dir }, 'Stopped watching the manifests folder'));
    },
    stop() {
      stopped = true;
      watcher?.close();
      if (timer) clearTimeout(timer);
      if (recheckTimer) clearTimeout(recheckTimer);
    },
    problems: () => problems,
    settling: () => settlingFiles,
    writer: {
      readTokenSecret: (namespace, connector) => state.tokenSecret(namespace, connector),
      writeTokenSecret: (owner, secret) => state.writeTokenSecret(owner, secret),
      deleteTokenSecret: (namespace, connector) => state.deleteTokenSecret(namespace, connector),
      writeStatus: (key, status) => state.saveStatus(key.kind, key.namespace, key.name, status),
    },
  };
}
