// The entity directory (a policy information point): properties of known subjects and resources,
// looked up by type and id. A decision merges an entity's directory properties under the request's
// own attributes (the request wins, key by key, no deep merge); the Rego translator embeds the part
// of the directory a bundle's rules read (rego.ts), so OPA merges the same way.
import type { DecisionInput } from './closures.ts';
import type { Json, RuleModel } from './model.ts';
import { pathsOf } from './model.ts';
import { codePointCompare, normalizeInput, type JsonMap } from './values.ts';

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
  const steps = buildDirectorySteps(entities);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** buildDirectory as steps of a few hundred entities each (see translateSteps). */
export function* buildDirectorySteps(entities: Iterable<DirectoryEntity>): Generator<void, EntityDirectory> {
  const byType = new Map<string, Map<string, JsonMap>>();
  let size = 0;
  let seen = 0;
  for (const e of entities) {
    if (++seen % 256 === 0) yield;
    const type = wellFormed(e.type);
    const id = wellFormed(e.id);
    let ids = byType.get(type);
    if (!ids) { ids = new Map(); byType.set(type, ids); }
    if (ids.has(id)) continue;
    ids.set(id, normalizeInput(e.properties) as JsonMap);
    size++;
  }
  const idLists = new Map<string, readonly string[]>();
  const types = sorted(byType.keys());
  return {
    size,
    get: (type, id) => byType.get(type)?.get(id),
    ids(type) {
      let list = idLists.get(type);
      if (list === undefined) {
        const ids = byType.get(type);
        list = ids ? sorted(ids.keys()) : NO_IDS;
        idLists.set(type, list);
      }
      return list;
    },
    types: () => types,
  };
}

export const EMPTY_DIRECTORY: EntityDirectory = buildDirectory([]);

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
    if (key === undefined) { needed.set(type, 'all'); return; }
    if (typeof key !== 'string' || key === 'type' || key === 'id') return;
    if (have) have.add(key); else needed.set(type, new Set([key]));
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
 * The part of a directory that the rules read: `{type: {id: {key: value}}}` with types, ids and
 * keys in code point order, and entities without a needed key left out. Empty when the rules read
 * nothing the directory has.
 */
export function directoryExtract(rules: readonly RuleModel[], directory: EntityDirectory): Map<string, Map<string, Map<string, Json>>> {
  const steps = directoryExtractSteps(neededProperties(rules), directory);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** directoryExtract as steps of a few hundred entities each (see translateSteps). */
export function* directoryExtractSteps(needed: ReadonlyMap<string, Set<string> | 'all'>, directory: EntityDirectory): Generator<void, Map<string, Map<string, Map<string, Json>>>> {
  const out = new Map<string, Map<string, Map<string, Json>>>();
  if (directory.size === 0) return out;
  for (const type of sorted(needed.keys())) {
    const keys = needed.get(type) as Set<string> | 'all';
    const ids = new Map<string, Map<string, Json>>();
    let n = 0;
    for (const id of directory.ids(type)) {
      const props = directory.get(type, id) as JsonMap;
      const names = sorted(keys === 'all' ? Object.keys(props) : [...keys].filter((k) => Object.hasOwn(props, k)));
      if (names.length > 0) ids.set(id, new Map(names.map((k) => [k, props[k] as Json])));
      if (++n % 256 === 0) yield;
    }
    if (ids.size > 0) out.set(type, ids);
  }
  return out;
}
