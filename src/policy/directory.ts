// The entity directory (a policy information point): properties of known subjects and resources,
// looked up by type and id. A decision merges an entity's directory properties under the request's
// own attributes (the request wins, key by key, no deep merge); the Rego translator embeds the part
// of the directory a bundle's rules read (regodirectory.ts), so OPA merges the same way.
import { runSteps } from './steps.ts';
import type { DecisionInput } from './closures.ts';
import type { RuleModel } from './model.ts';
import { pathsOf } from './model.ts';
import { normalizeInput } from './normalize.ts';
import { codePointCompare, type JsonMap } from './values.ts';

/** One entity as a Directory resource lists it. */
export interface DirectoryEntity {
  readonly type: string;
  readonly id: string;
  readonly properties: JsonMap;
}

/** A tenant's entities by type and id. Immutable. */
export interface EntityDirectory {
  /** Number of entities. */
  readonly size: number;
  /** The properties of an entity, or undefined when the directory does not know it. */
  get(type: string, id: string): JsonMap | undefined;
  /** The ids of one type, in code point order (what search pages through). */
  ids(type: string): readonly string[];
  /** The types that have entities, in code point order. */
  types(): readonly string[];
}

const NO_IDS: readonly string[] = [];

function sorted(values: Iterable<string>): string[] {
  return [...values].sort(codePointCompare);
}

/** A string as a decision input reads it: a lone surrogate becomes U+FFFD (as OPA's JSON decoder does). */
function wellFormed(s: string): string {
  return s.isWellFormed() ? s : s.toWellFormed();
}

/**
 * A directory of entities; an entity listed twice keeps its first listing (callers report repeats).
 * Types, ids and properties are read as a request's are, lone surrogates replaced, so the id a
 * request sends finds its entity here exactly as it does in the Rego (which prints ids that way).
 */
export function buildDirectory(entities: Iterable<DirectoryEntity>): EntityDirectory {
  return runSteps(buildDirectorySteps(entities));
}

/** Ids of one type are spread over this many maps, so an update copies one of them, not all. */
const BUCKETS = 256;

/** FNV-1a of the id's code units, modulo BUCKETS. */
function bucketOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h >>> 0) % BUCKETS;
}

interface TypeParts {
  readonly buckets: readonly ReadonlyMap<string, JsonMap>[];
  /** The ids in code point order. */
  readonly ids: readonly string[];
}

interface DirectoryParts {
  readonly byType: ReadonlyMap<string, TypeParts>;
  readonly size: number;
}

const DIRECTORY_PARTS = new WeakMap<EntityDirectory, DirectoryParts>();

/**
 * The maps an entity type's entities sit in (by a hash of the id), or undefined when the directory
 * has no such type or was not made here. A map is never changed once its directory is made, and an
 * update copies only the maps of the entities it changes: what is kept per map stays true.
 */
export function directoryBuckets(directory: EntityDirectory, type: string): readonly ReadonlyMap<string, JsonMap>[] | undefined {
  return DIRECTORY_PARTS.get(directory)?.byType.get(type)?.buckets;
}

function makeDirectory(parts: DirectoryParts): EntityDirectory {
  const { byType } = parts;
  const types = sorted(byType.keys());
  const directory: EntityDirectory = {
    size: parts.size,
    get: (type, id) => byType.get(type)?.buckets[bucketOf(id)]?.get(id),
    ids: (type) => byType.get(type)?.ids ?? NO_IDS,
    types: () => types,
  };
  DIRECTORY_PARTS.set(directory, parts);
  return directory;
}

/** buildDirectory as steps of a few hundred entities each (see translateSteps). */
export function* buildDirectorySteps(entities: Iterable<DirectoryEntity>): Generator<void, EntityDirectory> {
  const maps = new Map<string, Map<string, JsonMap>[]>();
  const idsOf = new Map<string, string[]>();
  let size = 0;
  let seen = 0;
  for (const e of entities) {
    if (++seen % 256 === 0) yield;
    const type = wellFormed(e.type);
    const id = wellFormed(e.id);
    let buckets = maps.get(type);
    if (!buckets) {
      buckets = Array.from({ length: BUCKETS }, () => new Map<string, JsonMap>());
      maps.set(type, buckets);
      idsOf.set(type, []);
    }
    const bucket = buckets[bucketOf(id)] as Map<string, JsonMap>;
    if (bucket.has(id)) continue;
    bucket.set(id, normalizeInput(e.properties) as JsonMap);
    idsOf.get(type)?.push(id);
    size++;
  }
  const byType = new Map<string, TypeParts>();
  // Every type's ids in order now, in steps: sorting 500,000 ids at once would hold the loop.
  for (const [type, buckets] of maps) byType.set(type, { buckets, ids: yield* sortSteps(idsOf.get(type) ?? []) });
  return makeDirectory({ byType, size });
}

/** One entity's properties now in effect (undefined: no Directory lists it any more). */
export interface EntityChange {
  readonly type: string;
  readonly id: string;
  readonly properties: JsonMap | undefined;
}

/**
 * The directory `previous` would be with these entities changed: only the maps of the changed
 * entities' buckets are copied, and the sorted ids only when ids come or go. Undefined when
 * `previous` was not built here or a type or id is not well-formed (then build it whole).
 */
export function updateDirectory(previous: EntityDirectory, changes: readonly EntityChange[]): EntityDirectory | undefined {
  const parts = DIRECTORY_PARTS.get(previous);
  if (!parts) return undefined;
  if (changes.some((c) => !c.type.isWellFormed() || !c.id.isWellFormed())) return undefined;
  const byType = new Map(parts.byType);
  const copied = new Map<string, { buckets: Map<string, JsonMap>[]; fresh: Set<number>; added: string[]; removed: Set<string> }>();
  let size = parts.size;
  for (const c of changes) {
    let t = copied.get(c.type);
    if (!t) {
      const before = byType.get(c.type);
      t = {
        buckets: before
          ? ([...before.buckets] as Map<string, JsonMap>[])
          : Array.from({ length: BUCKETS }, () => new Map<string, JsonMap>()),
        fresh: new Set(),
        added: [],
        removed: new Set(),
      };
      copied.set(c.type, t);
    }
    const b = bucketOf(c.id);
    if (!t.fresh.has(b)) {
      t.buckets[b] = new Map(t.buckets[b]);
      t.fresh.add(b);
    }
    const bucket = t.buckets[b] as Map<string, JsonMap>;
    const had = bucket.has(c.id);
    if (c.properties === undefined) {
      if (had) {
        bucket.delete(c.id);
        t.removed.add(c.id);
        size--;
      }
    } else {
      bucket.set(c.id, normalizeInput(c.properties) as JsonMap);
      if (!had) {
        t.added.push(c.id);
        size++;
      }
    }
  }
  for (const [type, t] of copied) {
    const before = parts.byType.get(type)?.ids ?? NO_IDS;
    let ids: readonly string[] = before;
    if (t.added.length > 0 || t.removed.size > 0) {
      // One linear merge of the ids kept and the ids added (sorted): a few milliseconds for 500,000.
      const added = t.added.sort(codePointCompare);
      const next: string[] = [];
      let j = 0;
      for (const id of before) {
        if (t.removed.has(id)) continue;
        while (j < added.length && codePointCompare(added[j] as string, id) < 0) next.push(added[j++] as string);
        next.push(id);
      }
      while (j < added.length) next.push(added[j++] as string);
      ids = next;
    }
    if (ids.length === 0) byType.delete(type);
    else byType.set(type, { buckets: t.buckets, ids });
  }
  return makeDirectory({ byType, size });
}

export const EMPTY_DIRECTORY: EntityDirectory = buildDirectory([]);

/** Elements sorted at once, and moved between two yields while merging. */
const SORT_RUN = 2048;

/**
 * Strings in code point order, as steps: runs of SORT_RUN sorted at once, then merged pairwise with
 * a yield every SORT_RUN elements moved. The same order as sorted().
 */
export function* sortSteps(items: string[]): Generator<void, string[]> {
  const n = items.length;
  for (let lo = 0; lo < n; lo += SORT_RUN) {
    const run = items.slice(lo, lo + SORT_RUN).sort(codePointCompare);
    for (let i = 0; i < run.length; i++) items[lo + i] = run[i] as string;
    yield;
  }
  let src = items;
  let dst = new Array<string>(n);
  let moved = 0;
  for (let width = SORT_RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        if (i < mid && (j >= hi || codePointCompare(src[i] as string, src[j] as string) <= 0)) dst[k] = src[i++] as string;
        else dst[k] = src[j++] as string;
        if (++moved % SORT_RUN === 0) yield;
      }
    }
    [src, dst] = [dst, src];
  }
  return src;
}

function withProperties(entity: JsonMap, directory: EntityDirectory): JsonMap {
  const type = entity['type'];
  const id = entity['id'];
  if (typeof type !== 'string' || typeof id !== 'string') return entity;
  const known = directory.get(type, id);
  // Spread defines properties (never calls the __proto__ setter); the request's keys come last and win.
  return known === undefined ? entity : { ...known, ...entity };
}

/**
 * The input a decision evaluates: the principal and the resource with their directory properties
 * merged under their own (a key the request gives wins, whole; `type` and `id` are the request's).
 */
export function withDirectory(input: DecisionInput, directory: EntityDirectory): DecisionInput {
  if (directory.size === 0) return input;
  const principal = withProperties(input.principal, directory);
  const resource = withProperties(input.resource, directory);
  return principal === input.principal && resource === input.resource ? input : { ...input, principal, resource };
}

/**
 * The directory properties the rules can read, by entity type: a condition reading `principal.x`
 * needs `x` of its subject type's entities, `resource.x` of its resource type's; one reading the
 * whole entity (`size(principal)`, `"x" in resource`) needs every key. `type` and `id` always come
 * from the request.
 */
export function neededProperties(rules: readonly RuleModel[]): Map<string, Set<string> | 'all'> {
  const needed = new Map<string, Set<string> | 'all'>();
  const add = (type: string, key: string | number | undefined): void => {
    const have = needed.get(type);
    if (have === 'all') return;
    if (key === undefined) {
      needed.set(type, 'all');
      return;
    }
    if (typeof key !== 'string' || key === 'type' || key === 'id') return;
    if (have) have.add(key);
    else needed.set(type, new Set([key]));
  };
  for (const rule of rules) {
    for (const p of pathsOf(rule.condition)) {
      if (p.root === 'principal') add(rule.subjectType, p.keys[0]);
      else if (p.root === 'resource') add(rule.resourceType, p.keys[0]);
    }
  }
  return needed;
}

/**
 * The properties of one entity that the rules read (`keys`: the needed names, or every one), in code
 * point order: what a bundle embeds for it. Empty: the entity is left out of the bundle.
 */
export function readKeys(props: JsonMap, keys: ReadonlySet<string> | 'all'): string[] {
  return sorted(keys === 'all' ? Object.keys(props) : [...keys].filter((k) => Object.hasOwn(props, k)));
}

/** Types, ids and properties sorted: the order a bundle lists them in. */
export { sorted as codePointSorted };
