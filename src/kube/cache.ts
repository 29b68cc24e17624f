// The cluster source's memory: the newest version of every watched object, and each token Secret
// both as the informer last reported it and as this replica last wrote it (a write's answer and the
// informer's event may arrive in either order).
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_VERSION, ObjectMeta } from '../api/index.ts';
import { abridgeStatus, LABEL_CONNECTOR, tokenSecretName, type Kind, type ObjectKey, type SourceObject } from '../controller/index.ts';
import { newerVersion } from './client.ts';

/** Token Secrets as the writer reads them. */
export interface TokenRecord {
  readonly resourceVersion: string | undefined;
  readonly ownerUids: readonly string[];
  readonly data: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface KubeCache {
  readonly objects: Map<Kind, Map<string, SourceObject>>;
  /** Token Secrets by `namespace/connector`, from the informer, and what this replica wrote since. */
  readonly tokens: Map<string, TokenRecord>;
  readonly written: Map<string, TokenRecord>;
}

export type ChangeType = 'add' | 'update' | 'delete';

/** An empty cache with a map for every kind the source watches. */
export function createCache(): KubeCache {
  return {
    objects: new Map<Kind, Map<string, SourceObject>>([
      ['Secret', new Map()],
      ['Connector', new Map()],
      ['Directory', new Map()],
      ['Rule', new Map()],
      ['Bundle', new Map()],
    ]),
    tokens: new Map(),
    written: new Map(),
  };
}

/** The cache's key of an object (or of a connector's token Secret): `namespace/name`. */
export function slot(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * Annotations nothing here reads and that can be large: kubectl's client-side apply keeps a whole
 * copy of the object in the first.
 */
const UNREAD_ANNOTATIONS: readonly string[] = ['kubectl.kubernetes.io/last-applied-configuration'];

function readAnnotations(annotations: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!annotations || !UNREAD_ANNOTATIONS.some((a) => a in annotations)) return annotations;
  const kept = Object.fromEntries(Object.entries(annotations).filter(([k]) => !UNREAD_ANNOTATIONS.includes(k)));
  return Object.keys(kept).length === 0 ? undefined : kept;
}

/**
 * The metadata fields the controllers read (never managedFields); typed client objects carry Dates,
 * watch events strings.
 */
function metadataOf(obj: KubernetesObject): unknown {
  const m = obj.metadata;
  if (!m) return undefined;
  const time = (t: unknown): string | undefined => (t instanceof Date ? t.toISOString() : typeof t === 'string' ? t : undefined);
  const picked: Record<string, unknown> = {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    generation: m.generation,
    creationTimestamp: time(m.creationTimestamp),
    deletionTimestamp: time(m.deletionTimestamp),
    labels: m.labels,
    annotations: readAnnotations(m.annotations),
    ownerReferences: m.ownerReferences,
  };
  return Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined && v !== null));
}

/** A client object as the controllers read it, or undefined (logged) when its metadata does not parse. */
export function toSource(kind: Kind, obj: KubernetesObject, log: Logger): SourceObject | undefined {
  const meta = ObjectMeta.safeParse(metadataOf(obj));
  if (!meta.success) {
    log.warn({ kind, name: obj.metadata?.name, namespace: obj.metadata?.namespace }, 'Ignored an object whose metadata we cannot read');
    return undefined;
  }
  const apiVersion = kind === 'Secret' ? 'v1' : API_VERSION;
  const raw: Record<string, unknown> = { ...(obj as Record<string, unknown>), apiVersion, kind, metadata: meta.data };
  // A Rule's status carries its Rego and spec, which the controller derives again: kept as a digest.
  const abridged = abridgeStatus(kind, raw['status'], meta.data.generation);
  if (!abridged) return { kind, metadata: meta.data, raw };
  return { kind, metadata: meta.data, raw: { ...raw, status: abridged.status }, statusDigest: abridged.digest };
}

/**
 * client-node's informer keeps every object it reported (for its relist, which finds the objects
 * that went, and its resourceVersion check) and hands that same object to our handlers. Once the
 * cache took what it reads, the informer's copy keeps only what the informer and a later deletion
 * event read: name, namespace, resourceVersion and labels (the token feed matches a deleted Secret
 * by its label). Managed fields, spec, status and data are then held once, by the cache.
 */
export function releaseInformerCopy(obj: KubernetesObject): void {
  const whole = obj as Record<string, unknown>;
  // Set to undefined rather than deleted: a deletion turns each object into a dictionary (measured:
  // about 350 bytes more per object than the fields it freed would leave).
  for (const field of Object.keys(whole)) if (field !== 'apiVersion' && field !== 'kind' && field !== 'metadata') whole[field] = undefined;
  const m = obj.metadata;
  if (!m) return;
  obj.metadata = {
    name: m.name,
    namespace: m.namespace,
    resourceVersion: m.resourceVersion,
    ...(m.labels ? { labels: m.labels } : {}),
  };
}

/** Keeps the newest version of an object: a write's response and the informer may arrive in either order. */
export function putObject(cache: KubeCache, obj: SourceObject): boolean {
  const map = cache.objects.get(obj.kind);
  if (!map) return false;
  const id = slot(obj.metadata.namespace, obj.metadata.name);
  const had = map.get(id);
  if (had && had.metadata.uid === obj.metadata.uid && !newerVersion(obj.metadata.resourceVersion, had.metadata.resourceVersion))
    return false;
  map.set(id, obj);
  return true;
}

/** The object held for a key, if any. */
export function getObject(cache: KubeCache, kind: Kind, namespace: string, name: string): SourceObject | undefined {
  return cache.objects.get(kind)?.get(slot(namespace, name));
}

/** Every object of a kind held, in one namespace or in all of them. */
export function listObjects(cache: KubeCache, kind: Kind, namespace: string | undefined): SourceObject[] {
  const all = [...(cache.objects.get(kind)?.values() ?? [])];
  return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
}

/** The key of every object held. */
export function objectKeys(cache: KubeCache): ObjectKey[] {
  const out: ObjectKey[] = [];
  for (const [kind, map] of cache.objects)
    for (const o of map.values()) out.push({ kind, namespace: o.metadata.namespace, name: o.metadata.name });
  return out;
}

/** What the writer needs of a token Secret, copied out of the client object. */
export function tokenRecord(obj: V1Secret | (KubernetesObject & { data?: Record<string, string> })): TokenRecord {
  const m = obj.metadata ?? {};
  return {
    resourceVersion: m.resourceVersion,
    ownerUids: (m.ownerReferences ?? []).filter((o) => o.kind === 'Connector').map((o) => o.uid),
    data: { ...((obj as { data?: Record<string, string> }).data ?? {}) },
    annotations: { ...(m.annotations ?? {}) },
  };
}

/** A connector's token Secret as this replica last wrote it, else as the informer last reported it. */
export function currentToken(cache: KubeCache, namespace: string, connector: string): TokenRecord | undefined {
  const id = slot(namespace, connector);
  return cache.written.get(id) ?? cache.tokens.get(id);
}

/** Applies an informer event on a Secret labelled with a connector; returns the Connector's key when it is its token Secret. */
export function applyTokenChange(cache: KubeCache, type: ChangeType, obj: KubernetesObject): ObjectKey | undefined {
  const namespace = obj.metadata?.namespace;
  const name = obj.metadata?.name;
  if (!namespace || !name) return undefined;
  const connector = obj.metadata?.labels?.[LABEL_CONNECTOR];
  if (!connector || name !== tokenSecretName(connector)) return undefined;
  const id = slot(namespace, connector);
  const record = tokenRecord(obj);
  const mine = cache.written.get(id);
  // A deletion is the informer's newest view even when it reports an older version (a relist
  // after 410 reports what it last saw): what this replica wrote is gone too.
  if (type === 'delete' || (mine && !newerVersion(mine.resourceVersion, record.resourceVersion))) cache.written.delete(id);
  if (type === 'delete') cache.tokens.delete(id);
  else cache.tokens.set(id, record);
  return { kind: 'Connector', namespace, name: connector };
}

/** Applies an informer event on a watched object; returns its key unless nothing changed (unreadable, or no newer than held). */
export function applyObjectChange(
  cache: KubeCache,
  kind: Kind,
  type: ChangeType,
  obj: KubernetesObject,
  log: Logger,
): ObjectKey | undefined {
  const namespace = obj.metadata?.namespace;
  const name = obj.metadata?.name;
  if (!namespace || !name) return undefined;
  if (type === 'delete') {
    cache.objects.get(kind)?.delete(slot(namespace, name));
  } else {
    const source = toSource(kind, obj, log);
    if (!source || !putObject(cache, source)) return undefined;
  }
  return { kind, namespace, name };
}
