// Directory → the tenant's entity directory in the store, and status: phase, entityCount, conditions.
// Every replica puts the same entities in effect (followers decide and build bundles too); only the
// leader writes status and events.
import { Directory } from '../api/index.ts';
import { describeIssues } from '../api/manifests.ts';
import { canonicalJson } from '../bundle/index.ts';
import { normalizeInput, type DirectoryEntity, type JsonMap } from '../policy/index.ts';
import { conditionsFor, type ConditionInput } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { keyText, type ObjectKey } from './types.ts';

/** Conflicts named in a status message; the rest are counted. */
const NAMED_CONFLICTS = 5;

function entityKey(e: { type: string; id: string }): string {
  return `${e.type}\u0000${e.id}`;
}

/** The other Directories of the tenant, as keys to reconcile (their conflicts may have changed). */
function others(deps: ReconcileDeps, namespace: string, name: string): ObjectKey[] {
  const names = new Set([...deps.objects.list('Directory', namespace).map((o) => o.metadata.name), ...deps.draft.directoryNames(namespace)]);
  names.delete(name);
  return [...names].sort().map((n) => ({ kind: 'Directory', namespace, name: n }));
}

/** Puts a Directory's entities in effect (or none); says which keys to look at when that changed anything. */
function putEntities(deps: ReconcileDeps, namespace: string, name: string, entities: readonly DirectoryEntity[] | undefined): Pick<Outcome, 'rebuildIn' | 'enqueue'> {
  const before = deps.draft.directoryEntities(namespace, name);
  const same = (before?.length ?? 0) === (entities?.length ?? 0) && canonicalJson(before ?? []) === canonicalJson(entities ?? []);
  if (same) return {};
  deps.draft.setDirectoryEntities(namespace, name, entities);
  return { rebuildIn: namespace, enqueue: others(deps, namespace, name) };
}

/** A valid Directory's entities as decisions read them. */
export function entitiesOf(directory: Directory): DirectoryEntity[] {
  return directory.spec.entities.map((e) => ({
    type: e.type,
    id: e.id,
    // Lone surrogates become U+FFFD, as in a request: OPA reads only well-formed text.
    properties: normalizeInput(e.properties) as JsonMap,
  }));
}

export function reconcileDirectory(key: ObjectKey, deps: ReconcileDeps): Outcome {
  const { namespace, name } = key;
  const obj = deps.objects.get('Directory', namespace, name);
  if (!obj) return putEntities(deps, namespace, name, undefined);
  const generation = obj.metadata.generation ?? 0;
  const recorded = obj.raw['status'] as { conditions?: { type?: string; reason?: string; message?: string }[] } | undefined;
  const status = (phase: string, entityCount: number, ready: ConditionInput): Record<string, unknown> => ({
    phase,
    observedGeneration: generation,
    entityCount,
    conditions: conditionsFor([ready], generation, deps.now(), recorded?.conditions),
  });
  const warnOnce = (reason: string, message: string): void => {
    const was = (recorded?.conditions ?? []).find((c) => c.type === 'Ready');
    if (deps.leading() && (was?.reason !== reason || was.message !== message)) deps.writer.recordEvent?.(obj, { type: 'Warning', reason, message });
  };

  const parsed = Directory.safeParse(obj.raw);
  if (!parsed.success) {
    // Every replica reads the same spec, so every replica puts nothing of it in effect: decisions
    // and bundles never depend on which replica remembers an older version.
    const message = `${describeIssues(parsed.error)}; none of its entities are in effect`;
    deps.log.warn({ kind: 'Directory', key: keyText(key), problem: message }, 'Rejected Directory');
    warnOnce('InvalidSpec', message);
    return { ...putEntities(deps, namespace, name, undefined), phase: 'Invalid', status: status('Invalid', 0, { type: 'Ready', status: false, reason: 'InvalidSpec', message }) };
  }
  const entities = entitiesOf(parsed.data);
  const changed = putEntities(deps, namespace, name, entities);

  // An entity an earlier Directory (by name) also lists keeps that one's properties.
  const earlier = new Map<string, string>();
  for (const other of deps.draft.directoryNames(namespace)) {
    if (other >= name) break;
    for (const e of deps.draft.directoryEntities(namespace, other) ?? []) if (!earlier.has(entityKey(e))) earlier.set(entityKey(e), other);
  }
  const shadowed = entities.filter((e) => earlier.has(entityKey(e)));
  const inEffect = entities.length - shadowed.length;
  if (shadowed.length === 0) {
    return {
      ...changed,
      phase: 'Ready',
      status: status('Ready', inEffect, { type: 'Ready', status: true, reason: 'Loaded', message: `${inEffect} entit${inEffect === 1 ? 'y is' : 'ies are'} in effect` }),
    };
  }
  const named = shadowed.slice(0, NAMED_CONFLICTS).map((e) => `${e.type} ${JSON.stringify(e.id)} (Directory ${earlier.get(entityKey(e)) ?? '?'})`);
  const more = shadowed.length > NAMED_CONFLICTS ? ` and ${shadowed.length - NAMED_CONFLICTS} more` : '';
  const message = `${shadowed.length} of ${entities.length} entities are also listed by a Directory whose name sorts first, and its properties are in effect for them: ${named.join(', ')}${more}; ${inEffect === 0 ? 'none of its own is' : inEffect === 1 ? 'the other 1 is' : `the other ${inEffect} are`} in effect`;
  warnOnce('DuplicateEntities', message);
  return { ...changed, phase: 'Conflict', status: status('Conflict', inEffect, { type: 'Ready', status: false, reason: 'DuplicateEntities', message }) };
}
