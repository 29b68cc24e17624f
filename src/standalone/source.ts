// The folder source: every YAML document under a folder, re-read when the folder changes. It keys
// objects, gives them a generation (+1 when the spec changes, remembered in the state folder) and
// enqueues what changed; the controllers do the rest, exactly as with the Kubernetes source.
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Logger } from 'pino';
import { canonicalJson } from '../bundle/index.ts';
import { keyText, type ClusterWriter, type ObjectKey, type ObjectReader, type SourceObject } from '../controller/index.ts';
import { readObjects, type DocumentProblem, type ReadObject } from './objects.ts';
import { stripInternal, type ObjectState, type StateFolder } from './state.ts';

/** An object as the source holds it, with the generation the API server would have given it. */
interface Held {
  readonly object: ReadObject;
  readonly fingerprint: string;
  readonly generation: number;
  readonly specDigest: string;
}

export interface FolderSource extends ObjectReader {
  /** Reads the folder once and enqueues every key (and every key the state folder remembers). */
  start(): Promise<void>;
  rescan(): Promise<void>;
  /** Re-reads the folder after every change (debounced). */
  watch(): void;
  stop(): void;
  problems(): readonly DocumentProblem[];
  readonly writer: ClusterWriter;
}

export interface FolderSourceOptions {
  readonly dir: string;
  readonly state: StateFolder;
  readonly log: Logger;
  readonly enqueue: (key: ObjectKey) => void;
  readonly debounceMs?: number;
  /**
   * An object missing from a scan is deleted only when a scan this much later still misses it, so a
   * file caught half-written (truncated, then filled) never deletes tokens or revision history.
   */
  readonly confirmDeleteMs?: number;
  /** A file changed less than this before a scan is parsed again even if its stat looks unchanged. */
  readonly racyWindowMs?: number;
}

/** YAML files under a folder, in name order; symlinks followed, Kubernetes' `..data` copies skipped. */
export async function yamlFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir, { recursive: true });
  const files: string[] = [];
  for (const name of names.sort()) {
    if (!/\.ya?ml$/i.test(name) || name.split(sep).some((part) => part.startsWith('..') || part.startsWith('.'))) continue;
    const full = join(dir, name);
    if ((await stat(full).catch(() => undefined))?.isFile()) files.push(full);
  }
  return files;
}

function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

function fingerprintOf(object: SourceObject): string {
  const { labels, annotations } = object.metadata;
  return canonicalJson({ labels, annotations, spec: object.raw['spec'], data: object.raw['data'] });
}

/** What the state folder remembers, as the source held it before a restart (files that stop parsing keep it). */
function heldFromState(s: ObjectState): Held {
  const metadata = stripInternal(s.raw['metadata']);
  const object: ReadObject = { kind: s.kind, metadata, raw: { ...s.raw, metadata }, source: s.source, document: 0 };
  return { object, fingerprint: fingerprintOf(object), generation: s.generation, specDigest: s.specDigest };
}

export function createFolderSource(options: FolderSourceOptions): FolderSource {
  const { dir, state, log, enqueue } = options;
  let held = new Map<string, Held>();
  const missingSince = new Map<string, number>();
  const confirmDeleteMs = options.confirmDeleteMs ?? 1000;
  let recheckTimer: NodeJS.Timeout | undefined;
  const keyOf = (h: Held): ObjectKey => ({ kind: h.object.kind, namespace: h.object.metadata.namespace, name: h.object.metadata.name });
  /** After a restart the state folder knows the generation of what the folder held before. */
  const stateHeld = (o: ReadObject): Held | undefined => {
    const s = o.kind === 'Secret' ? undefined : state.object(o.kind, o.metadata.namespace, o.metadata.name);
    return s ? heldFromState(s) : undefined;
  };
  const scheduleRescan = (delayMs: number): void => {
    if (recheckTimer) return;
    recheckTimer = setTimeout(() => {
      recheckTimer = undefined;
      rescan().catch((err: unknown) => log.error({ err, dir }, 'Failed to read the manifests folder'));
    }, delayMs);
    recheckTimer.unref();
  };
  let problems: DocumentProblem[] = [];
  // Parsed files, kept while their stat is unchanged: re-reading a folder of 10,000 rules after one
  // new file then parses one file, not 800 ms of YAML. A file changed within the last two seconds is
  // always read again, so a write that keeps size and a coarse mtime is never missed.
  const parsed = new Map<string, { stamp: string; mtimeMs: number; read: ReturnType<typeof readObjects> }>();
  const readCached = async (file: string, source: string, scanStartedMs: number): Promise<ReturnType<typeof readObjects>> => {
    const st = await stat(file);
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    const cached = parsed.get(file);
    if (cached && cached.stamp === stamp && cached.mtimeMs < scanStartedMs - (options.racyWindowMs ?? 2000)) return cached.read;
    const read = readObjects(await readFile(file, 'utf8'), source);
    parsed.set(file, { stamp, mtimeMs: Math.max(st.mtimeMs, st.ctimeMs), read });
    return read;
  };
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let scanning: Promise<void> | undefined;
  let again = false;

  async function scan(): Promise<void> {
    const files = await yamlFiles(dir);
    const next = new Map<string, Held>();
    const found: DocumentProblem[] = [];
    const unreadable = new Set<string>();
    const scanStartedMs = Date.now();
    const seen = new Set<string>();
    for (const file of files) {
      const source = relative(dir, file) || file;
      seen.add(file);
      let read: ReturnType<typeof readObjects>;
      try {
        read = await readCached(file, source, scanStartedMs);
      } catch (err) {
        unreadable.add(source);
        found.push({ source, document: 0, name: undefined, message: `cannot read: ${err instanceof Error ? err.message : String(err)}` });
        continue;
      }
      if (read.unreadable) unreadable.add(source);
      found.push(...read.problems);
      for (const object of read.objects) {
        const key = keyText({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name });
        const first = next.get(key);
        if (first) {
          found.push({ source, document: object.document, name: object.metadata.name, message: `${key} is already defined in ${first.object.source} (document ${first.object.document}); this copy is ignored` });
          continue;
        }
        const known = held.get(key) ?? stateHeld(object);
        const specDigest = sha256(canonicalJson(object.raw['spec'] ?? null));
        // The API server's rule: the generation moves with the spec only, not with labels or annotations.
        const generation = !known ? 1 : known.specDigest === specDigest ? known.generation : known.generation + 1;
        next.set(key, { object, fingerprint: fingerprintOf(object), generation, specDigest });
      }
    }
    for (const file of parsed.keys()) if (!seen.has(file)) parsed.delete(file);
    const now = Date.now();
    let recheck = false;
    for (const [key, h] of held) {
      if (next.has(key)) { missingSince.delete(key); continue; }
      // Nothing is lost to a typo: objects of a file that no longer parses stay as they were.
      if (unreadable.has(h.object.source)) { missingSince.delete(key); next.set(key, h); continue; }
      const since = missingSince.get(key) ?? now;
      if (now - since < confirmDeleteMs) { missingSince.set(key, since); next.set(key, h); recheck = true; }
    }
    const changed: ObjectKey[] = [];
    for (const [key, h] of next) if (held.get(key)?.fingerprint !== h.fingerprint || held.get(key)?.generation !== h.generation) changed.push(keyOf(h));
    const gone = [...held].filter(([k]) => !next.has(k)).map(([, h]) => h);
    // The new view (objects and generations together) is in place before anything is written or
    // enqueued: a reconcile never mixes two scans.
    held = next;
    for (const h of gone) {
      missingSince.delete(keyText(keyOf(h)));
      log.info({ kind: h.object.kind, key: keyText(keyOf(h)) }, 'Saw object removed from the manifests folder');
      changed.push(keyOf(h));
    }
    for (const key of changed) {
      const h = held.get(keyText(key));
      if (key.kind === 'Secret') continue;
      if (h === undefined) { await state.removeObject(key.kind, key.namespace, key.name); continue; }
      const known = state.object(key.kind, key.namespace, key.name);
      await state.saveObject({ kind: key.kind, namespace: key.namespace, name: key.name, generation: h.generation, specDigest: h.specDigest, source: h.object.source, raw: h.object.raw, status: known?.status });
    }
    for (const key of changed) enqueue(key);
    if (recheck) scheduleRescan(confirmDeleteMs);
    const before = new Set(problems.map((p) => canonicalJson(p)));
    for (const p of found) if (!before.has(canonicalJson(p))) log.warn({ file: p.source, document: p.document, name: p.name, problem: p.message }, 'Skipped manifest document');
    if (canonicalJson(found) !== canonicalJson(problems)) await state.writeProblems(found);
    problems = found;
  }

  async function rescan(): Promise<void> {
    if (scanning) { again = true; return scanning; }
    scanning = (async () => {
      try {
        do { again = false; await scan(); } while (again);
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
      return [...held.values()].filter((h) => h.object.kind === kind && (namespace === undefined || h.object.metadata.namespace === namespace)).map(toSource);
    },
    async start() {
      await state.load();
      // Start from what the folder held before the restart: a file that no longer parses keeps its
      // objects, and an object deleted while we were down is deleted like any other.
      held = new Map(state.objects().map((o) => [keyText(o), heldFromState(o)]));
      await rescan();
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
      watcher?.close();
      if (timer) clearTimeout(timer);
      if (recheckTimer) clearTimeout(recheckTimer);
    },
    problems: () => problems,
    writer: {
      readTokenSecret: (namespace, connector) => state.tokenSecret(namespace, connector),
      writeTokenSecret: (owner, secret) => state.writeTokenSecret(owner, secret),
      deleteTokenSecret: (namespace, connector) => state.deleteTokenSecret(namespace, connector),
      writeStatus: (key, status) => state.saveStatus(key.kind, key.namespace, key.name, status),
    },
  };
}
