// A tenant's entity directory: the Directory lists as given, which Directories list each entity, and
// the directory built whole (in slices) or updated for just the entities the edits since touched.
import {
  buildDirectory,
  buildDirectorySteps,
  EMPTY_DIRECTORY,
  updateDirectory,
  type DirectoryEntity,
  type EntityChange,
  type EntityDirectory,
} from '../policy/index.ts';
import { setOrDelete, tenantDraft, type Run, type StoreState, type TenantDraft } from './draft.ts';

/** Entity changes applied to the last directory at once; more build it whole, in slices. */
const MAX_DIRECTORY_UPDATE = 2048;

/** A Directory's entities by key, made once per entity list (lists are never changed in place). */
const ENTITY_INDEX = new WeakMap<readonly DirectoryEntity[], Map<string, DirectoryEntity>>();

function entityKey(type: string, id: string): string {
  return `${type}\u0000${id}`;
}

/**
 * `given` with each entity whose properties did not change keeping its properties object from
 * `before`: the directory and the Rego lines kept with it need nothing new for it.
 */
function keepingProperties(
  before: readonly DirectoryEntity[],
  given: readonly DirectoryEntity[] | undefined,
): readonly DirectoryEntity[] | undefined {
  let entities = given;
  if (given && before.length > 0) {
    // The controller gives an entity that did not change as the same object: only the others are looked up.
    const same = new Set(before);
    let old: Map<string, DirectoryEntity> | undefined;
    let kept = 0;
    const mapped = given.map((e) => {
      if (same.has(e)) return e;
      old ??= new Map(before.map((b) => [entityKey(b.type, b.id), b]));
      const was = old.get(entityKey(e.type, e.id));
      if (!was || was.properties === e.properties || JSON.stringify(was.properties) !== JSON.stringify(e.properties)) return e;
      kept++;
      return { ...e, properties: was.properties };
    });
    if (kept > 0) entities = mapped;
  }
  return entities;
}

/** Sets or (undefined) removes the entities Directory `<t>/<n>` lists, and who lists each entity. */
export function setDirectoryEntities(state: StoreState, t: string, n: string, given: readonly DirectoryEntity[] | undefined): void {
  const d = tenantDraft(state, t);
  const before = d.directories.get(n) ?? [];
  const entities = keepingProperties(before, given);
  // What the controller gave is what it reads back (it compares lists by identity).
  setOrDelete(d.given, n, given && given.length > 0 ? given : undefined);
  // An entity object in both lists is listed as it was, with the same properties: nothing to do for it.
  const after = new Set(entities);
  const was = new Set(before);
  for (const e of before) {
    if (after.has(e)) continue;
    d.touched.set(entityKey(e.type, e.id), e);
    removeListing(d, e.type, e.id, n);
  }
  setOrDelete(d.directories, n, entities && entities.length > 0 ? entities : undefined);
  for (const e of entities ?? []) {
    if (was.has(e)) continue;
    d.touched.set(entityKey(e.type, e.id), e);
    addListing(d, e.type, e.id, n);
  }
  d.directory = undefined;
  d.directoryVersion++;
  state.dirty.add(t);
}

/** Directory `n` no longer lists the entity. */
function removeListing(d: TenantDraft, type: string, id: string, n: string): void {
  const ids = d.listings.get(type);
  const names = ids?.get(id);
  if (!ids || names === undefined) return;
  if (typeof names === 'string') {
    if (names === n) ids.delete(id);
  } else {
    const left = names.filter((x) => x !== n);
    ids.set(id, left.length === 1 ? (left[0] as string) : left);
  }
  if (ids.size === 0) d.listings.delete(type);
}

/** Directory `n` lists the entity (too). */
function addListing(d: TenantDraft, type: string, id: string, n: string): void {
  let ids = d.listings.get(type);
  if (!ids) {
    ids = new Map();
    d.listings.set(type, ids);
  }
  const names = ids.get(id);
  if (names === undefined) ids.set(id, n);
  else if (typeof names === 'string') {
    if (names !== n) ids.set(id, [names, n].sort());
  } else if (!names.includes(n)) ids.set(id, [...names, n].sort());
}

function listingsOf(d: TenantDraft | undefined, type: string, id: string): string | readonly string[] | undefined {
  return d?.listings.get(type)?.get(id);
}

/** Names of the Directories that list an entity, sorted. */
export function listedBy(state: StoreState, t: string, type: string, id: string): readonly string[] {
  const names = listingsOf(state.tenants.get(t), type, id);
  return names === undefined ? [] : typeof names === 'string' ? [names] : names;
}

/** Every Directory's entities, in Directory name order. */
function allEntities(d: TenantDraft): DirectoryEntity[] {
  return [...d.directories.keys()].sort().flatMap((n) => d.directories.get(n) ?? []);
}

/** Builds a tenant's directory, if a Directory changed, through `run` (in slices). */
export async function prepareDirectory(d: TenantDraft | undefined, run: Run): Promise<void> {
  if (!d || d.directories.size === 0 || d.directory) return;
  if (updatedDirectory(d)) return;
  const version = d.directoryVersion;
  const built = await run(buildDirectorySteps(allEntities(d)));
  // A Directory set meanwhile makes this build stale: directory() builds the newest at once.
  if (d.directoryVersion === version) recordBuilt(d, built);
}

/** A tenant's directory (EMPTY_DIRECTORY: none), updated or built now when a Directory changed. */
export function directoryOf(d: TenantDraft | undefined): EntityDirectory {
  if (!d || d.directories.size === 0) return EMPTY_DIRECTORY;
  if (!d.directory && !updatedDirectory(d)) recordBuilt(d, buildDirectory(allEntities(d)));
  return d.directory ?? EMPTY_DIRECTORY;
}

/** Records a directory built whole: later edits update it. */
function recordBuilt(d: TenantDraft, directory: EntityDirectory): void {
  d.directory = directory;
  d.lastDirectory = directory;
  d.touched.clear();
}

/**
 * The tenant's directory updated from the last one built, for the entities the Directory edits
 * since then touched (each one's first listing now, or none): false when there is no such
 * directory or too much changed (then it is built whole, in slices).
 */
function updatedDirectory(d: TenantDraft): boolean {
  const base = d.lastDirectory;
  if (!base || d.touched.size > Math.max(10_000, base.size / 10)) return false;
  const changes: EntityChange[] = [];
  for (const [key, e] of d.touched) {
    const names = listingsOf(d, e.type, e.id);
    const owner = typeof names === 'string' ? names : names?.[0];
    const props = owner === undefined ? undefined : entityIn(d, owner, key)?.properties;
    if (props !== base.get(e.type, e.id)) changes.push({ type: e.type, id: e.id, properties: props });
  }
  // Many changes touch most buckets: a whole build in slices costs the loop less than copying them at once.
  if (changes.length > MAX_DIRECTORY_UPDATE) return false;
  const next = updateDirectory(base, changes);
  if (!next) return false;
  recordBuilt(d, next);
  return true;
}

/** An entity of a Directory by key, through an index made once per entity list. */
function entityIn(d: TenantDraft, name: string, key: string): DirectoryEntity | undefined {
  const list = d.directories.get(name);
  if (!list) return undefined;
  let index = ENTITY_INDEX.get(list);
  if (!index) {
    index = new Map(list.map((e) => [entityKey(e.type, e.id), e]));
    ENTITY_INDEX.set(list, index);
  }
  return index.get(key);
}
