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
import type { StateFolder } from './state.ts';

interface Held { readonly object: ReadObject; readonly fingerprint: string }

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

export function createFolderSource(options: FolderSourceOptions): FolderSource {
  const { dir, state, log, enqueue } = options;
  let held = new Map<string, Held>();
  let problems: DocumentProblem[] = [];
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let scanning: Promise<void> | undefined;
  let again = false;

  async function scan(): Promise<void> {
    const files = await yamlFiles(dir);
    const next = new Map<string, Held>();
    const found: DocumentProblem[] = [];
    const unreadable = new Set<string>();
    for (const file of files) {
      const source = relative(dir, file) || file;
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        unreadable.add(source);
        found.push({ source, document: 0, name: undefined, message: `cannot read: ${err instanceof Error ? err.message : String(err)}` });
        continue;
      }
      const read = readObjects(text, source);
      if (read.unreadable) unreadable.add(source);
      found.push(...read.problems);
      for (const object of read.objects) {
        const key = keyText({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name });
        const first = next.get(key);
        if (first) {
          found.push({ source, document: object.document, name: object.metadata.name, message: `${key} is already defined in ${first.object.source} (document ${first.object.document}); this copy is ignored` });
          continue;
        }
        const { metadata } = object;
        const fingerprint = canonicalJson({ labels: metadata.labels, annotations: metadata.annotations, spec: object.raw['spec'], data: object.raw['data'] });
        next.set(key, { object, fingerprint });
      }
    }
    // Nothing is lost to a typo: objects of a file that no longer parses stay as they were.
    for (const [key, h] of held) if (!next.has(key) && unreadable.has(h.object.source)) next.set(key, h);

    const changed: ObjectKey[] = [];
    for (const [key, h] of next) {
      const { kind } = h.object;
      const { namespace, name } = h.object.metadata;
      if (kind !== 'Secret') {
        const specDigest = sha256(canonicalJson(h.object.raw['spec'] ?? null));
        const known = state.object(kind, namespace, name);
        // The API server's rule: the generation moves with the spec only, not with labels or annotations.
        const edited = held.has(key) && held.get(key)?.fingerprint !== h.fingerprint;
        if (!known || known.specDigest !== specDigest || edited) {
          const generation = !known ? 1 : known.specDigest === specDigest ? known.generation : known.generation + 1;
          await state.saveObject({ kind, namespace, name, generation, specDigest, raw: h.object.raw, status: known?.status });
        }
      }
      if (held.get(key)?.fingerprint !== h.fingerprint) changed.push({ kind, namespace, name });
    }
    const gone = [...held].filter(([k]) => !next.has(k));
    // The new view is in place before any key is enqueued: a reconcile always reads this scan.
    held = next;
    for (const [key, h] of gone) {
      log.info({ kind: h.object.kind, key }, 'Saw object removed from the manifests folder');
      const { kind } = h.object;
      const { namespace, name } = h.object.metadata;
      if (kind !== 'Secret') await state.removeObject(kind, namespace, name);
      changed.push({ kind, namespace, name });
    }
    for (const key of changed) enqueue(key);
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
    const metadata = { ...h.object.metadata, generation: known?.generation ?? 1, uid: `standalone:${kind}/${namespace}/${name}` };
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
      await rescan();
      // Objects the state folder remembers but the folder no longer has were deleted while we were down.
      for (const s of state.objects()) {
        if (!held.has(keyText(s))) { await state.removeObject(s.kind, s.namespace, s.name); enqueue(s); }
      }
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
