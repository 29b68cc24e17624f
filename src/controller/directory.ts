// Directory → the tenant's entity directory in the store, and status: phase, entityCount, conditions.
// Every replica puts the same entities in effect (followers decide and build bundles too); only the
// leader writes status and events.
import { DirectoryStatus, readStatus } from '../api/index.ts';
import type { DirectoryEntity } from '../policy/index.ts';
import { conditionsFor, warnOnce, type ConditionInput } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { readEntities } from './entities.ts';
import { rememberDirectoryFacts } from '../lint/index.ts';
import { keyText, type ObjectKey, type SourceObject } from './types.ts';

/** Conflicts named in a status message; the rest are counted. */
const NAMED_CONFLICTS = 5;

/**
 * The Directories whose conflicts may change when these entities come or go: those that list any
 * of them too (found through the store's listings, not by reading every Directory).
 */
function coListers(deps: ReconcileDeps, namespace: string, name: string, entities: Iterable<DirectoryEntity>): ObjectKey[] {
  const names = new Set<string>();
  for (const e of entities) for (const n of deps.draft.listedBy(namespace, e.type, e.id)) if (n !== name) names.add(n);
  return [...names].sort().map((n) => ({ kind: 'Directory', namespace, name: n }));
}

/** Puts a Directory's entities in effect (or none); says which keys to look at when that changed anything. */
function putEntities(
  deps: ReconcileDeps,
  namespace: string,
  name: string,
  entities: readonly DirectoryEntity[] | undefined,
): Pick<Outcome, 'rebuildIn' | 'enqueue'> {
  const before = deps.draft.directoryEntities(namespace, name) ?? [];
  // Their co-listers before the change (they may lose a conflict) and after it (they may gain one).
  const enqueue = coListers(deps, namespace, name, before);
  deps.draft.setDirectoryEntities(namespace, name, entities);
  const after = coListers(deps, namespace, name, entities ?? []);
  const keys = new Map([...enqueue, ...after].map((k) => [k.name, k]));
  return { rebuildIn: namespace, enqueue: [...keys.values()] };
}

/** What a Directory object was read as: kept while the object is the same, so a resync parses nothing. */
interface Parsed {
  readonly raw: object;
  /** The entities, or the problem with the spec. */
  readonly entities: readonly DirectoryEntity[] | undefined;
  readonly problem: string | undefined;
}

/** What each Directory object was read as, by key text. */
type ParsedBy = Map<string, Parsed>;

/** A Directory as one reconcile sees it: the object, its status as recorded (read once), its entities in the store. */
interface Seen {
  readonly key: ObjectKey;
  readonly obj: SourceObject;
  readonly generation: number;
  readonly previous: DirectoryStatus;
  readonly inDraft: readonly DirectoryEntity[] | undefined;
}

type Placed = Pick<Outcome, 'rebuildIn' | 'enqueue'>;

function parse(parsedBy: ParsedBy, id: string, raw: Readonly<Record<string, unknown>>): Parsed {
  const known = parsedBy.get(id);
  if (known?.raw === raw) return known;
  // Only the entities that differ from what the object was read as last are validated; the same
  // entities as before (an edit of the description, a new resourceVersion) give the same array, so
  // the store sees no change.
  const read = readEntities(raw, known?.entities);
  // Lint reads the same entities: it need not parse the spec whole again.
  if (read.entities && read.asWritten) rememberDirectoryFacts(raw, read.entities);
  const made: Parsed = { raw, entities: read.entities, problem: read.problem };
  parsedBy.set(id, made);
  return made;
}

/** A reconcile function for Directories; it remembers what each object was read as. */
export function createDirectoryReconciler(): (key: ObjectKey, deps: ReconcileDeps) => Outcome {
  const parsedBy: ParsedBy = new Map();
  return function reconcileDirectory(key, deps) {
    return reconcile(key, deps, parsedBy);
  };
}

function reconcile(key: ObjectKey, deps: ReconcileDeps, parsedBy: ParsedBy): Outcome {
  const { namespace, name } = key;
  const id = keyText(key);
  const obj = deps.objects.get('Directory', namespace, name);
  const inDraft = deps.draft.directoryEntities(namespace, name);
  if (!obj) {
    parsedBy.delete(id);
    return inDraft ? putEntities(deps, namespace, name, undefined) : {};
  }
  const seen: Seen = {
    key,
    obj,
    generation: obj.metadata.generation ?? 0,
    previous: readStatus(DirectoryStatus, obj.raw['status']),
    inDraft,
  };
  const parsed = parse(parsedBy, id, obj.raw);
  if (parsed.entities === undefined) return reject(seen, deps, parsed.problem);
  const entities = parsed.entities;
  const changed = put(seen, deps, entities);
  return { ...changed, ...judged(seen, deps, entities) };
}

/** The store holds the entities of what was put in effect last (none for an invalid spec). */
function put(seen: Seen, deps: ReconcileDeps, entities: readonly DirectoryEntity[] | undefined): Placed {
  const wanted = entities && entities.length > 0 ? entities : undefined;
  return seen.inDraft === wanted ? {} : putEntities(deps, seen.key.namespace, seen.key.name, wanted);
}

function statusOf(
  seen: Seen,
  deps: ReconcileDeps,
  phase: NonNullable<DirectoryStatus['phase']>,
  entityCount: number,
  ready: ConditionInput,
): DirectoryStatus {
  return {
    phase,
    observedGeneration: seen.generation,
    entityCount,
    conditions: conditionsFor([ready], seen.generation, deps.now(), seen.previous.conditions),
  };
}

/**
 * Every replica reads the same spec, so every replica puts nothing of it in effect: decisions and
 * bundles never depend on which replica remembers an older version.
 */
function reject(seen: Seen, deps: ReconcileDeps, problem: string | undefined): Outcome {
  const message = `${problem ?? 'invalid spec'}; none of its entities are in effect`;
  deps.log.warn({ kind: 'Directory', key: keyText(seen.key), problem: message }, 'Rejected Directory');
  warnOnce(deps, seen.obj, seen.previous.conditions, 'InvalidSpec', message);
  return {
    ...put(seen, deps, undefined),
    phase: 'Invalid',
    status: statusOf(seen, deps, 'Invalid', 0, { type: 'Ready', status: false, reason: 'InvalidSpec', message }),
  };
}

/** What the status says of entities put in effect: Ready, or Conflict when an earlier Directory lists some of them too. */
function judged(seen: Seen, deps: ReconcileDeps, entities: readonly DirectoryEntity[]): Pick<Outcome, 'phase' | 'status'> {
  const { namespace, name } = seen.key;
  // An entity an earlier Directory (by name) also lists keeps that one's properties.
  const shadowedBy = new Map<DirectoryEntity, string>();
  for (const e of entities) {
    const first = deps.draft.listedBy(namespace, e.type, e.id)[0];
    if (first !== undefined && first !== name) shadowedBy.set(e, first);
  }
  const shadowed = [...shadowedBy.keys()];
  const inEffect = entities.length - shadowed.length;
  if (shadowed.length === 0) {
    const message = `${inEffect} entit${inEffect === 1 ? 'y is' : 'ies are'} in effect`;
    return { phase: 'Ready', status: statusOf(seen, deps, 'Ready', inEffect, { type: 'Ready', status: true, reason: 'Loaded', message }) };
  }
  const named = shadowed.slice(0, NAMED_CONFLICTS).map((e) => `${e.type} ${JSON.stringify(e.id)} (Directory ${shadowedBy.get(e) ?? '?'})`);
  const more = shadowed.length > NAMED_CONFLICTS ? ` and ${shadowed.length - NAMED_CONFLICTS} more` : '';
  const message = `${shadowed.length} of ${entities.length} entities are also listed by a Directory whose name sorts first, and its properties are in effect for them: ${named.join(', ')}${more}; ${inEffect === 0 ? 'none of its own is' : inEffect === 1 ? 'the other 1 is' : `the other ${inEffect} are`} in effect`;
  warnOnce(deps, seen.obj, seen.previous.conditions, 'DuplicateEntities', message);
  return {
    phase: 'Conflict',
    status: statusOf(seen, deps, 'Conflict', inEffect, { type: 'Ready', status: false, reason: 'DuplicateEntities', message }),
  };
}
