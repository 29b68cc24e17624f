// What each console action changes on an object, as FieldChanges an ObjectEditor writes: pure, so
// the Kubernetes patcher and the manifest editor write the very same fields (service spec: Settings >
// Connectors: Active, Rotate, Revoke, Generate; a rule's Verify Panel: Regenerate).
import { isObject } from '../api/index.ts';
import { ANNOTATION_REGENERATE, type FieldChange, type SourceObject } from './types.ts';

/** Active on or off: an Inactive connector's bundles answer 403 (spec.active). */
export function activeChanges(active: boolean): FieldChange[] {
  return [{ path: ['spec', 'active'], value: active }];
}

/** Rotate: spec.tokenRotation one above its current value (0 when unset), so a new token replaces the old one at once. */
export function rotateChanges(obj: SourceObject): FieldChange[] {
  const spec = obj.raw['spec'];
  const current = isObject(spec) ? spec['tokenRotation'] : undefined;
  const rotation = typeof current === 'number' && Number.isSafeInteger(current) && current >= 0 ? current : 0;
  return [{ path: ['spec', 'tokenRotation'], value: rotation + 1 }];
}

/** Revoke: the token is removed, every poller gets 401 and the connector is Inactive (spec.revoked). */
export function revokeChanges(): FieldChange[] {
  return [{ path: ['spec', 'revoked'], value: true }];
}

/** Generate: a revoked connector gets a new token (spec.revoked back to false). */
export function generateChanges(): FieldChange[] {
  return [{ path: ['spec', 'revoked'], value: false }];
}

/**
 * Regenerate: the rule is translated again, whatever its spec (the controller re-translates when the
 * acl.policyagent.dev/regenerate annotation takes a value it has not translated for, and
 * status.translation.regenerate then records that value). The value is `nowIso`; when the rule
 * already carries exactly that value (two clicks in one millisecond), a suffix keeps it new.
 */
export function regenerateChanges(nowIso: string, current?: SourceObject): FieldChange[] {
  const previous = current?.metadata.annotations?.[ANNOTATION_REGENERATE];
  let value = nowIso;
  if (previous !== undefined && (previous === nowIso || previous.startsWith(`${nowIso}.`))) {
    const n = Number(previous.slice(nowIso.length + 1));
    value = `${nowIso}.${Number.isSafeInteger(n) && n > 0 ? n + 1 : 2}`;
  }
  return [{ path: ['metadata', 'annotations', ANNOTATION_REGENERATE], value }];
}

/**
 * A copy of `base` with every change's path set to its value (mappings created where missing): what
 * an object reads as once the changes are written, and, from `{}`, the JSON merge patch that writes them.
 */
export function withChanges(base: Readonly<Record<string, unknown>>, changes: readonly FieldChange[]): Record<string, unknown> {
  const root = structuredClone(base) as Record<string, unknown>;
  for (const c of changes) {
    let at = root;
    for (const step of c.path.slice(0, -1)) {
      const next = at[step];
      const child = isObject(next) ? next : {};
      at[step] = child;
      at = child;
    }
    at[c.path.at(-1) as string] = c.value;
  }
  return root;
}

/** A change as a person reads it: `spec.active` or `metadata.annotations["acl.policyagent.dev/regenerate"]`. */
export function fieldName(change: FieldChange): string {
  const [first, second, third] = change.path;
  return first === 'metadata' && second === 'annotations' && third !== undefined
    ? `metadata.annotations[${JSON.stringify(third)}]`
    : change.path.join('.');
}

const SPEC_FIELD = /^[A-Za-z][A-Za-z0-9]*$/;
/** An annotation key: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters. */
const ANNOTATION_KEY =
  /^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/**
 * Why `changes` cannot be written, or undefined: an action sets fields directly under spec, or
 * string annotations; nothing else (a name, a namespace, a label) is ever edited by an action.
 */
export function changesProblem(changes: readonly FieldChange[]): string | undefined {
  if (changes.length === 0) return 'nothing to change';
  for (const c of changes) {
    const [first, second, third] = c.path;
    if (first === 'spec' && c.path.length === 2 && second !== undefined && SPEC_FIELD.test(second)) continue;
    if (first === 'metadata' && second === 'annotations' && c.path.length === 3 && third !== undefined && ANNOTATION_KEY.test(third)) {
      if (typeof c.value !== 'string') return `the annotation ${JSON.stringify(third)} must be set to a string`;
      continue;
    }
    return `an action may set a field of spec or an annotation, not ${JSON.stringify(c.path.join('.'))}`;
  }
  return undefined;
}
