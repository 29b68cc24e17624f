// What the folder source holds between scans, as one explicit object the scan, settle and apply
// modules share: the objects in force with the generations the API server would have given them,
// what is known of each file, and the settings (and the injected clock) every scan reads.
import type { Logger } from 'pino';
import { keyText, type ObjectKey, type SourceObject } from '../controller/index.ts';
import type { Slicer } from '../work/index.ts';
import type { DocumentProblem, ReadObject } from './objects.ts';
import { fingerprintOf, type ManifestRead, type ParsedObject } from './parse.ts';
import type { ManifestReader } from './reader.ts';
import { stripInternal } from './state-objects.ts';
import type { ObjectState, StateFolder } from './state.ts';

/** An object as the source holds it, with the generation the API server would have given it. */
export interface Held {
  /** keyText of the object. */
  readonly key: string;
  readonly object: ReadObject;
  readonly fingerprint: string;
  readonly generation: number;
  readonly specDigest: string;
}

/** What the source knows of one file. */
export interface FileState {
  /** The last read, reused while the file's stat stays the same and old enough. */
  last: { stamp: string; read: ManifestRead; objects: ParsedObject[] } | undefined;
  /** The hash of the content in force (undefined: none of this run yet). */
  applied: string | undefined;
  /** Content seen but not yet in force, and when it was first seen. */
  pending: { hash: string; sinceMs: number } | undefined;
}

/** What a scan reads and never changes. */
export interface ScanSettings {
  readonly dir: string;
  readonly state: StateFolder;
  readonly log: Logger;
  readonly enqueue: (key: ObjectKey) => void;
  readonly reader: ManifestReader;
  /** Milliseconds since the epoch: the only time the folder source reads. */
  readonly clock: () => number;
  readonly settleMs: number;
  readonly confirmDeleteMs: number;
  readonly racyWindowMs: number;
  readonly slicer: Slicer;
  /** A rescan `delayMs` from now (the earliest asked for wins). */
  readonly scheduleRescan: (delayMs: number) => void;
}

/** The folder source's state between scans. */
export interface SourceView extends ScanSettings {
  /** The objects in force, by keyText. */
  held: Map<string, Held>;
  /** When a scan first missed an object still held (confirm-delete). */
  readonly missingSince: Map<string, number>;
  readonly fileStates: Map<string, FileState>;
  /** What each object read was held as, so an unchanged document costs no new objects. */
  readonly heldOf: WeakMap<ParsedObject, Held>;
  /**
   * What each file (by source) put into the view at the last scan that held its objects: the very
   * objects read, and the duplicates among them it reported. A scan in which every file gives the
   * same keeps the view as it is (scan.ts), without a pass over the objects.
   */
  readonly contributions: Map<string, { readonly objects: readonly ParsedObject[]; readonly problems: readonly DocumentProblem[] }>;
  /** The sources of the held objects, each with whether it holds API keys (Secrets), for the `held` they were taken of. */
  sources: { readonly held: ReadonlyMap<string, Held>; readonly keys: ReadonlyMap<string, boolean> } | undefined;
  /** Scans never keep the view without a pass over the objects (the equivalence tests' cold path). */
  readonly alwaysWhole?: boolean;
  problems: DocumentProblem[];
  /** Files whose newest content waits to hold still. */
  settlingFiles: string[];
  firstScan: boolean;
}

/** A view holding nothing yet, with `settings`. */
export function emptyView(settings: ScanSettings, alwaysWhole = false): SourceView {
  return {
    ...settings,
    ...(alwaysWhole ? { alwaysWhole } : {}),
    held: new Map(),
    missingSince: new Map(),
    fileStates: new Map(),
    heldOf: new WeakMap(),
    contributions: new Map(),
    sources: undefined,
    problems: [],
    settlingFiles: [],
    firstScan: true,
  };
}

/** The sources of `held`, each with whether it holds API keys (Secrets): one pass over the objects. */
export function sourcesOf(held: ReadonlyMap<string, Held>): ReadonlyMap<string, boolean> {
  const keys = new Map<string, boolean>();
  for (const h of held.values())
    if (h.object.kind === 'Secret' || !keys.has(h.object.source)) keys.set(h.object.source, h.object.kind === 'Secret');
  return keys;
}

/** The Held an object of the state folder stands for (as the manifests folder had it). */
export function heldFromState(s: ObjectState): Held {
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

/** What the state folder remembers of `o` (never of a Secret), as a Held. */
export function stateHeld(state: StateFolder, o: ReadObject): Held | undefined {
  const s = o.kind === 'Secret' ? undefined : state.object(o.kind, o.metadata.namespace, o.metadata.name);
  return s ? heldFromState(s) : undefined;
}

/** The key the controllers are given for `h`. */
export function keyOf(h: Held): ObjectKey {
  return { kind: h.object.kind, namespace: h.object.metadata.namespace, name: h.object.metadata.name };
}

/** The SourceObject last made of a Held, with the status it carries: made again only when the status changed. */
const SOURCES = new WeakMap<Held, { readonly status: unknown; readonly source: SourceObject }>();

/**
 * `h` as the controllers read it: with its generation, a uid, and the status the state folder keeps.
 * The same object while neither changes, so listing a tenant of 10,000 objects copies none of them.
 */
export function toSource(state: StateFolder, h: Held): SourceObject {
  const { kind } = h.object;
  const { namespace, name } = h.object.metadata;
  const status = kind === 'Secret' ? undefined : state.object(kind, namespace, name)?.status;
  const made = SOURCES.get(h);
  if (made && made.status === status) return made.source;
  const metadata = { ...h.object.metadata, generation: h.generation, uid: `standalone:${kind}/${namespace}/${name}` };
  const source: SourceObject = { kind, metadata, raw: { ...h.object.raw, metadata, ...(status ? { status } : {}) } };
  SOURCES.set(h, { status, source });
  return source;
}

/** The held objects by kind and by `kind/namespace`, in the order the view holds them. */
export type HeldIndex = ReadonlyMap<string, readonly Held[]>;

/** The index of `held`: one pass, so each list() after a scan costs what it returns. */
export function indexHeld(held: ReadonlyMap<string, Held>): HeldIndex {
  const index = new Map<string, Held[]>();
  const add = (k: string, h: Held): void => {
    const list = index.get(k);
    if (list) list.push(h);
    else index.set(k, [h]);
  };
  for (const h of held.values()) {
    add(h.object.kind, h);
    add(`${h.object.kind}/${h.object.metadata.namespace}`, h);
  }
  return index;
}
