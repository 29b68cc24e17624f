// What a source may leave out of a recorded status, and how the controller still tells whether the
// status it would write is the recorded one. A Rule's status records its translation's Rego and the
// spec it was made from; the controller makes both again from the spec, so a source holding
// thousands of Rules (the Kubernetes cache) keeps a digest of them instead, and the spec only while
// it is not the object's own (a Stale translation, or one of an older generation: what stays in
// force while the spec is invalid, also after a restart).
import { createHash } from 'node:crypto';
import { isObject } from '../api/index.ts';
import { canonicalJson } from '../bundle/index.ts';
import { sameStatus } from './conditions.ts';
import type { Kind, SourceObject } from './types.ts';

/** A status without the parts the controller derives again, and the digest of those parts. */
export interface Abridged {
  readonly status: Readonly<Record<string, unknown>>;
  readonly digest: string;
}

/**
 * A status as a source may keep it (kind Rule only: its translation without the Rego, and without
 * the spec when that is the spec of `generation`); undefined: nothing to leave out.
 */
export function abridgeStatus(kind: Kind, status: unknown, generation: number | undefined): Abridged | undefined {
  if (kind !== 'Rule' || !isObject(status) || !isObject(status['translation'])) return undefined;
  const { rego, spec, ...kept } = status['translation'];
  // The spec of a Current translation of this very generation is the object's own spec.
  const ownSpec = kept['status'] === 'Current' && generation !== undefined && kept['generation'] === generation;
  const left = { ...(rego === undefined ? {} : { rego }), ...(spec === undefined || !ownSpec ? {} : { spec }) };
  if (Object.keys(left).length === 0) return undefined;
  return {
    status: { ...status, translation: { ...kept, ...(spec === undefined || ownSpec ? {} : { spec }) } },
    digest: createHash('sha256').update(canonicalJson(left)).digest('base64'),
  };
}

/** Whether `status` is what the object's status records, also when the source keeps it abridged. */
export function sameAsRecorded(obj: SourceObject, status: Readonly<Record<string, unknown>>): boolean {
  if (obj.statusDigest === undefined) return sameStatus(obj.raw['status'], status);
  const abridged = abridgeStatus(obj.kind, status, obj.metadata.generation);
  return abridged !== undefined && abridged.digest === obj.statusDigest && sameStatus(obj.raw['status'], abridged.status);
}
