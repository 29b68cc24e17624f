// The ports between the controllers and the sources. A source (folder or Kubernetes) implements
// ObjectReader and ClusterWriter; the controllers decide, the source only moves objects in and out.
import type { ObjectMeta } from '../api/index.ts';

export type Kind = 'Secret' | 'Connector' | 'Directory' | 'Rule' | 'Bundle';
/** The order a drain reconciles kinds in: keys first, rules and directories before the bundles built from them. */
export const KIND_ORDER: readonly Kind[] = ['Secret', 'Connector', 'Directory', 'Rule', 'Bundle'];

export interface ObjectKey {
  readonly kind: Kind;
  readonly namespace: string;
  readonly name: string;
}

/** `Rule/acme/team-documents` */
export function keyText(k: ObjectKey): string {
  return `${k.kind}/${k.namespace}/${k.name}`;
}

export function parseKey(text: string): ObjectKey {
  const [kind, namespace, name] = text.split('/') as [Kind, string, string];
  return { kind, namespace, name };
}

/**
 * An object as a source holds it: metadata checked (so it has a key), the rest as written. The
 * controllers validate `spec` themselves, so that an invalid spec becomes status.
 */
export interface SourceObject {
  readonly kind: Kind;
  readonly metadata: ObjectMeta;
  readonly raw: Readonly<Record<string, unknown>>;
  /**
   * Set when the source keeps `raw.status` abridged (abridgeStatus: a Rule's translation without
   * the Rego it derives again): the digest of what it left out. Compare with sameAsRecorded.
   */
  readonly statusDigest?: string;
}

export interface ObjectReader {
  get(kind: Kind, namespace: string, name: string): SourceObject | undefined;
  list(kind: Kind, namespace?: string): readonly SourceObject[];
}

/** One field an action sets: spec.active, spec.tokenRotation, spec.revoked, or an annotation. */
export interface FieldChange {
  readonly path: readonly string[];
  readonly value: string | number | boolean;
}

/** What an edit did: where the change now lives, or a sentence a person reads saying why it did not happen. */
export type EditOutcome =
  | { readonly ok: true; readonly where: string }
  | { readonly ok: false; readonly status: 404 | 409 | 422 | 500; readonly message: string };

/**
 * Writes a person's action where the object's truth lives: a merge patch of the object in
 * Kubernetes, an edit of its manifest file in standalone mode. The source then delivers the change
 * like any other, so the controllers see it as kubectl or a text editor would have made it.
 */
export interface ObjectEditor {
  edit(key: ObjectKey, changes: readonly FieldChange[]): Promise<EditOutcome>;
}

/** The token Secret of a connector, decoded. */
export interface TokenSecret {
  /** undefined while the connector is revoked. */
  readonly token: string | undefined;
  /** spec.tokenRotation the token was issued for. */
  readonly rotation: number;
  /** ISO 8601 */
  readonly issuedAt: string;
}

/** What the controllers write. Implementations persist (state folder) or call the API server. */
export interface ClusterWriter {
  readTokenSecret(namespace: string, connector: string): TokenSecret | undefined;
  writeTokenSecret(owner: SourceObject, secret: TokenSecret): Promise<void>;
  /** Called when a Connector is gone (Kubernetes' garbage collector does it through ownerReferences). */
  deleteTokenSecret(namespace: string, connector: string): Promise<void>;
  writeStatus(key: ObjectKey, status: Readonly<Record<string, unknown>>): Promise<void>;
  /**
   * Reports a transition on an object (Kubernetes Events: `kubectl describe` shows them). Called
   * by the leader only, once per transition; best effort: a failure is logged, never retried.
   */
  recordEvent?(obj: SourceObject, event: ObjectEvent): void;
}

export interface ObjectEvent {
  readonly type: 'Normal' | 'Warning';
  /** UpperCamelCase, e.g. TokenRotated, InvalidSpec, Built. */
  readonly reason: string;
  readonly message: string;
}

/**
 * Thrown by writeTokenSecret when a Secret of the token Secret's name exists and is not one this
 * operator manages: it is never overwritten, and the Connector reports the conflict.
 */
export class TokenSecretConflict extends Error {
  override readonly name = 'TokenSecretConflict';
}

/** Name of a connector's token Secret. */
export function tokenSecretName(connector: string): string {
  return `${connector}-token`;
}

export const LABEL_API_KEY = 'acl.policyagent.dev/api-key';
export const LABEL_CONNECTOR = 'acl.policyagent.dev/connector';
export const ANNOTATION_ROTATION = 'acl.policyagent.dev/token-rotation';
export const ANNOTATION_ISSUED_AT = 'acl.policyagent.dev/token-issued-at';
export const ANNOTATION_REGENERATE = 'acl.policyagent.dev/regenerate';
