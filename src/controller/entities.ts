// A Directory's entities read again after an edit: an entity equal to one read last time keeps that
// one's object (it was validated then, and the store and the Rego kept per bucket recognise it by
// identity), so only the entities that changed are validated. Anything unusual (a new object, an
// invalid or repeated entity, too many) is read whole by the schema, which words every problem.
import { checkSpec } from '../admission/index.ts';
import { Directory, DirectoryEntitySchema, isObject, MAX_ENTITIES } from '../api/index.ts';
import { normalizeInput, type DirectoryEntity, type JsonMap } from '../policy/index.ts';

/** The entities of a Directory object, or the problem with its spec as status words it. */
export type ReadEntities =
  /** `asWritten`: every entity's property names are the object's own (none was normalized). */
  | { readonly entities: readonly DirectoryEntity[]; readonly asWritten: boolean; readonly problem?: undefined }
  | { readonly entities?: undefined; readonly problem: string };

/**
 * An entity as decisions read it, `raw` (as the object lists it) once the schema has read it as
 * `valid`: the object listed itself when it is exactly an entity already (type, id and clean
 * properties; lone surrogates become U+FFFD, as in a request), so the source's object is the one
 * copy the store, the directory and the views share.
 */
function entityOf(
  raw: unknown,
  valid: { readonly type: string; readonly id: string; readonly properties: Record<string, unknown> },
  reading: Reading,
): DirectoryEntity {
  const properties = normalizeInput(valid.properties) as JsonMap;
  if (properties !== valid.properties) reading.normalized = true;
  if (
    isObject(raw) &&
    properties === raw['properties'] &&
    raw['type'] === valid.type &&
    raw['id'] === valid.id &&
    Object.keys(raw).length === 3
  )
    return raw as unknown as DirectoryEntity;
  return { type: valid.type, id: valid.id, properties };
}

/** A valid Directory's entities as decisions read them (`list`: the entities as the object lists them). */
function entitiesOf(directory: Directory, list: unknown, reading: Reading): DirectoryEntity[] {
  return directory.spec.entities.map((e, i) => entityOf(Array.isArray(list) ? list[i] : undefined, e, reading));
}

/** What one read did: whether any entity's properties were normalized (copied, lone surrogates replaced). */
interface Reading {
  normalized: boolean;
}

/** A plain JSON object (no class instance a YAML tag can make). */
function isPlain(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** The same JSON: the same keys in the same order, numbers by Object.is (so -0 is not 0). */
function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (!isPlain(a) || !isPlain(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i] as string;
    if (k !== kb[i] || !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** Whether `raw` (an entity as the object lists it) is `known` (an entity read and validated before). */
function isKnown(raw: unknown, known: DirectoryEntity): boolean {
  if (!isObject(raw) || !isPlain(raw)) return false;
  for (const k of Object.keys(raw)) if (k !== 'type' && k !== 'id' && k !== 'properties') return false;
  if (raw['type'] !== known.type || raw['id'] !== known.id) return false;
  const props = raw['properties'];
  return props === undefined ? Object.keys(known.properties).length === 0 : sameJson(props, known.properties);
}

function keyOf(type: string, id: string): string {
  return `${type}\u0000${id}`;
}

/**
 * The entities of `raw` when it differs from what was read last only in some entities, each of
 * those valid: undefined when it must be read whole (first read, anything invalid or repeated).
 */
function readChanged(
  raw: Readonly<Record<string, unknown>>,
  before: readonly DirectoryEntity[],
  reading: Reading,
): DirectoryEntity[] | undefined {
  const spec = raw['spec'];
  if (!isObject(spec) || !Array.isArray(spec['entities'])) return undefined;
  const list: readonly unknown[] = spec['entities'];
  if (list.length > MAX_ENTITIES) return undefined;
  // Everything but the entities, by the schema: metadata, description, status, unknown fields.
  if (!checkSpec(Directory, { ...raw, spec: { ...spec, entities: [] } }).ok) return undefined;
  let byKey: Map<string, DirectoryEntity> | undefined;
  const seen = new Set<string>();
  const out: DirectoryEntity[] = [];
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    let entity = before[i];
    if (entity === undefined || !isKnown(e, entity)) {
      // Entities moved (one inserted or removed before them): look them up by type and id.
      byKey ??= new Map(before.map((b) => [keyOf(b.type, b.id), b]));
      const t = isObject(e) ? e['type'] : undefined;
      const id = isObject(e) ? e['id'] : undefined;
      const found = typeof t === 'string' && typeof id === 'string' ? byKey.get(keyOf(t, id)) : undefined;
      if (found !== undefined && isKnown(e, found)) entity = found;
      else {
        const one = DirectoryEntitySchema.safeParse(e);
        if (!one.success) return undefined;
        const read = entityOf(e, one.data, reading);
        // Equal once read (a lone surrogate written again): still the entity read before.
        entity = found !== undefined && sameJson(read.properties, found.properties) ? found : read;
      }
    }
    const key = keyOf(entity.type, entity.id);
    if (seen.has(key)) return undefined;
    seen.add(key);
    out.push(entity);
  }
  return out;
}

/**
 * A Directory object's entities, reading again only those that differ from `before` (what the
 * previous version of the object was read as). The result is `before` itself when nothing changed,
 * and keeps `before`'s entity objects for the entities that did not.
 */
export function readEntities(raw: Readonly<Record<string, unknown>>, before: readonly DirectoryEntity[] | undefined): ReadEntities {
  const reading: Reading = { normalized: false };
  let entities = before && before.length > 0 ? readChanged(raw, before, reading) : undefined;
  if (!entities) {
    reading.normalized = false;
    const parsed = checkSpec(Directory, raw);
    if (!parsed.ok) return { problem: parsed.problem.message };
    const spec = raw['spec'];
    entities = entitiesOf(parsed.object, isObject(spec) ? spec['entities'] : undefined, reading);
    if (before && before.length > 0) {
      const byKey = new Map(before.map((b) => [keyOf(b.type, b.id), b]));
      entities = entities.map((e) => {
        const was = byKey.get(keyOf(e.type, e.id));
        return was !== undefined && sameJson(e.properties, was.properties) ? was : e;
      });
    }
  }
  const same = before !== undefined && before.length === entities.length && entities.every((e, i) => e === before[i]);
  // An entity kept from before has the same property names as written (sameJson compares them).
  return { entities: same ? before : entities, asWritten: !reading.normalized };
}
