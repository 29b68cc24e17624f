// One read of the manifests folder: each file's objects keyed and given the generation the API
// server would give them, into the next view; files whose objects stay as they were (unreadable,
// emptied, being written, not settled) and the problems found are noted for apply.ts.
import { relative } from 'node:path';
import { keyText } from '../controller/index.ts';
import type { DocumentProblem } from './objects.ts';
import type { ManifestRead, ParsedObject } from './parse.ts';
import { fileStateOf, readOrReuse, settled } from './settle.ts';
import { type Held, type SourceView, sourcesOf, stateHeld } from './view.ts';
import { walkManifests } from './walk.ts';

/** What a scan found, for applyScan. */
export interface ScanResult {
  /** The objects the folder holds now, by keyText. */
  readonly next: Map<string, Held>;
  readonly found: DocumentProblem[];
  /** Files whose objects stay as they were: unreadable, emptied, being written, or not settled. */
  readonly keep: Set<string>;
  /** Kept files that hold no objects now: the API keys (Secrets) they held are revoked, the rest stays. */
  readonly emptied: Set<string>;
  /** Files whose newest content waits to hold still. */
  readonly settling: string[];
  /** The folders whose changes matter (walk.ts), for the watcher. */
  readonly folders: readonly string[];
}

/**
 * Reads every manifest file (reusing unchanged reads) and lets the reader forget files that are gone.
 * When every file gives what it gave before (the same objects read, or kept as they were) and no
 * deletion waits to be confirmed, the next view is the current one: no pass over the objects (the
 * first scan of a settling edit, and every periodic rescan).
 */
export async function scanFolder(v: SourceView): Promise<ScanResult> {
  const walked = await walkManifests(v.dir);
  const result: ScanResult = {
    next: new Map(),
    found: [...walked.problems],
    keep: new Set(),
    emptied: new Set(),
    settling: [],
    folders: walked.folders,
  };
  const scanStartedMs = v.clock();
  const seen = new Set<string>();
  if (v.sources?.held !== v.held) v.sources = { held: v.held, keys: sourcesOf(v.held) };
  const heldSources = v.sources.keys;
  const files: { source: string; objects: ParsedObject[] | undefined; found: DocumentProblem[] }[] = [];
  let same = !v.firstScan && !v.alwaysWhole && v.missingSince.size === 0;
  for (const file of walked.files) {
    const source = relative(v.dir, file) || file;
    seen.add(file);
    const found: DocumentProblem[] = [];
    const heldKeys = heldSources.get(source) === true;
    const objects = await usableObjects(v, result, found, {
      file,
      source,
      scanStartedMs,
      heldSource: heldSources.has(source),
      heldKeys,
    });
    files.push({ source, objects, found });
    if (!same) continue;
    if (objects === undefined) same = !(result.emptied.has(source) && heldKeys);
    else same = objects.length === 0 ? !heldSources.has(source) : v.contributions.get(source)?.objects === objects;
  }
  const walkedSources = new Set(files.map((f) => f.source));
  const goneFiles = [...v.fileStates.keys()].filter((file) => !seen.has(file));
  for (const file of goneFiles) v.fileStates.delete(file);
  if (goneFiles.length > 0) await v.reader.forget(goneFiles);
  // Every held object's file was walked: otherwise its deletion is to be confirmed.
  if (same) for (const source of heldSources.keys()) if (!walkedSources.has(source)) same = false;
  if (same) {
    for (const f of files) result.found.push(...f.found, ...(f.objects?.length ? (v.contributions.get(f.source)?.problems ?? []) : []));
    return { ...result, next: v.held };
  }
  for (const f of files) {
    result.found.push(...f.found);
    if (!f.objects) continue;
    const duplicates: DocumentProblem[] = [];
    await holdObjects(v, result, duplicates, f.source, f.objects);
    result.found.push(...duplicates);
    v.contributions.set(f.source, { objects: f.objects, problems: duplicates });
  }
  for (const source of v.contributions.keys()) if (!walkedSources.has(source)) v.contributions.delete(source);
  return result;
}

/** One file of a scan. */
interface ScannedFile {
  readonly file: string;
  /** The file relative to the manifests folder. */
  readonly source: string;
  readonly scanStartedMs: number;
  /** Whether objects held now came from this file. */
  readonly heldSource: boolean;
  /** Whether API keys (Secrets) held now came from this file. */
  readonly heldKeys: boolean;
}

/** A file's objects when its content is used now; undefined when the file keeps what it had (noted in `r`). */
async function usableObjects(v: SourceView, r: ScanResult, found: DocumentProblem[], f: ScannedFile): Promise<ParsedObject[] | undefined> {
  const { source } = f;
  const fs = fileStateOf(v, f.file);
  let got: { read: ManifestRead; objects: ParsedObject[] };
  try {
    got = await readOrReuse(v, f.file, source, fs, f.scanStartedMs);
  } catch (err) {
    r.keep.add(source);
    found.push({ source, document: 0, name: undefined, message: `cannot read: ${err instanceof Error ? err.message : String(err)}` });
    return undefined;
  }
  const { read, objects } = got;
  if (read.changing) {
    r.keep.add(source);
    r.settling.push(source);
    v.scheduleRescan(Math.max(v.settleMs, 50));
    return undefined;
  }
  // A file still being written is neither used nor reported: its bytes count once they hold still.
  if (!settled(v, fs, read, v.clock())) {
    r.keep.add(source);
    r.settling.push(source);
    return undefined;
  }
  if (read.unreadable) {
    // Nothing is lost to a typo or a limit: the file's objects stay as they were until it is fixed.
    r.keep.add(source);
    found.push(...read.problems);
    return undefined;
  }
  if (objects.length === 0 && f.heldSource) {
    // An emptied file (or one left with nothing usable) deletes nothing but its API keys: removing it
    // does. A key is a credential: whoever empties its file means to take it away, and a key wrongly
    // revoked is a 401 put right by filling the file again, while a key wrongly kept is a door left open.
    r.keep.add(source);
    r.emptied.add(source);
    const keys = f.heldKeys ? '; the API keys it held are revoked' : '';
    found.push(...read.problems, {
      source,
      document: 0,
      name: undefined,
      message: `the file holds no objects now: the objects it held stay in force until it is filled again or removed${keys}`,
    });
    return undefined;
  }
  if (fs.applied !== read.hash) {
    if (fs.applied !== undefined || !v.firstScan) v.log.info({ file: source, objects: objects.length }, 'Read a changed manifest file');
    fs.applied = read.hash;
  }
  fs.pending = undefined;
  found.push(...read.problems);
  return objects;
}

/** Puts a file's objects into the next view: a key defined twice keeps its first copy. */
async function holdObjects(
  v: SourceView,
  r: ScanResult,
  duplicates: DocumentProblem[],
  source: string,
  objects: readonly ParsedObject[],
): Promise<void> {
  for (let i = 0; i < objects.length; i++) {
    if ((i & 255) === 255) {
      const paused = v.slicer.pause();
      if (paused) await paused;
    }
    const parsed = objects[i] as ParsedObject;
    const same = v.heldOf.get(parsed);
    // The very document read before (the reader keeps unchanged documents' objects): held as it was.
    if (same && v.held.get(same.key) === same && !r.next.has(same.key)) {
      r.next.set(same.key, same);
      continue;
    }
    const { object, fingerprint, specDigest } = parsed;
    const key = keyText({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name });
    const first = r.next.get(key);
    if (first) {
      duplicates.push({
        source,
        document: object.document,
        name: object.metadata.name,
        message: `${key} is already defined in ${first.object.source} (document ${first.object.document}); this copy is ignored`,
      });
      continue;
    }
    const known = v.held.get(key) ?? stateHeld(v.state, object);
    // The API server's rule: the generation moves with the spec only, not with labels or annotations.
    const generation = !known ? 1 : known.specDigest === specDigest ? known.generation : known.generation + 1;
    const h: Held = { key, object, fingerprint, generation, specDigest };
    v.heldOf.set(parsed, h);
    r.next.set(key, h);
  }
}
