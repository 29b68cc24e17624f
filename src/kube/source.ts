// The cluster source: informers for Rules, Connectors, Bundles, API key Secrets and token Secrets
// feed our own object maps (ObjectReader) and the controller's queue; the writer (ClusterWriter)
// creates token Secrets and writes status. Informers stop on error: they are restarted with backoff,
// and client-node relists by itself after 410 Gone (deleted objects are reported by the relist).
import { randomBytes } from 'node:crypto';
import { makeInformer, type Informer, type KubernetesListObject, type KubernetesObject, type V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_VERSION, GROUP, ObjectMeta, VERSION } from '../api/meta.ts';
import {
  ANNOTATION_ISSUED_AT,
  ANNOTATION_ROTATION,
  LABEL_API_KEY,
  LABEL_CONNECTOR,
  keyText,
  tokenSecretName,
  TokenSecretConflict,
  type ClusterWriter,
  type Kind,
  type ObjectKey,
  type ObjectReader,
  type SourceObject,
  type TokenSecret,
} from '../controller/index.ts';
import { collectionPath, describeError, newerVersion, PLURALS, statusOf, type CustomKind, type KubeClients } from './client.ts';

/** The label every Secret the operator writes carries, next to the connector label. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'acl-operator';
/** Key of the CA certificate in token Secrets: OPA's `ca_cert` reads it from the same volume. */
export const CA_KEY = 'ca.crt';

export interface KubeSourceOptions {
  readonly clients: KubeClients;
  /** undefined: every namespace. */
  readonly namespaces: readonly string[] | undefined;
  readonly log: Logger;
  enqueue(key: ObjectKey): void;
  /** A watch failed and will be restarted (for the watch restarts metric). */
  onWatchRestart?(feed: string): void;
  /** A feed listed its collection: at start, and again after 410 Gone. */
  onList?(feed: string): void;
  /** The CA OPAs should trust, copied into token Secrets. */
  readonly caBundle?: () => string | undefined;
  /** This replica's name, as the reporting instance of Events. */
  readonly identity?: string;
  /** First restart delay after a failed watch (default 1 s), doubled up to maxRestartMs (default 30 s). */
  readonly restartMs?: number;
  readonly maxRestartMs?: number;
}

export interface KubeSource extends ObjectReader {
  readonly writer: ClusterWriter;
  /** Starts every informer; resolves once each has listed (and its objects were enqueued) once. */
  start(): Promise<void>;
  /** Every object key known, for resyncs and for a new leader's first pass. */
  keys(): ObjectKey[];
  /** Writes the current CA into every token Secret that holds another one (leader only). */
  syncCa(): Promise<void>;
  stop(): Promise<void>;
}

type Role = 'object' | 'token';
interface Feed {
  readonly name: string;
  readonly kind: Kind;
  readonly role: Role;
  readonly namespace: string | undefined;
  readonly labelSelector: string | undefined;
}

/** The metadata fields the controllers read; typed client objects carry Dates, watch events strings. */
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
    annotations: m.annotations,
    ownerReferences: m.ownerReferences,
  };
  return Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined && v !== null));
}

/** Token Secrets as the writer reads them. */
interface TokenRecord {
  readonly resourceVersion: string | undefined;
  readonly ownerUids: readonly string[];
  readonly data: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

function tokenRecord(obj: V1Secret | (KubernetesObject & { data?: Record<string, string> })): TokenRecord {
  const m = obj.metadata ?? {};
  return {
    resourceVersion: m.resourceVersion,
    ownerUids: (m.ownerReferences ?? []).filter((o) => o.kind === 'Connector').map((o) => o.uid),
    data: { ...((obj as { data?: Record<string, string> }).data ?? {}) },
    annotations: { ...(m.annotations ?? {}) },
  };
}

/** What a person can do about a list or watch that keeps failing. */
function hintFor(feed: Feed, err: unknown): { hint?: string } {
  const status = statusOf(err);
  if (status === 404 && feed.kind !== 'Secret') return { hint: 'the CustomResourceDefinitions are not installed: kubectl apply -f crds/' };
  if (status === 403)
    return { hint: `forbidden: the operator's RBAC does not allow this (deploy/20-rbac.yaml; with --namespaces, deploy/namespaced/)` };
  if (status === 401) return { hint: 'the API server refused the credentials: check the kubeconfig or the service account token' };
  return {};
}

export function createKubeSource(options: KubeSourceOptions): KubeSource {
  const { clients, log } = options;
  const objects = new Map<Kind, Map<string, SourceObject>>([
    ['Secret', new Map()],
    ['Connector', new Map()],
    ['Directory', new Map()],
    ['Rule', new Map()],
    ['Bundle', new Map()],
  ]);
  /** Token Secrets by `namespace/connector`, from the informer, and what this replica wrote since. */
  const tokens = new Map<string, TokenRecord>();
  const written = new Map<string, TokenRecord>();
  const starters = new Map<object, () => void>();
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  const slot = (namespace: string, name: string): string => `${namespace}/${name}`;

  function toSource(kind: Kind, obj: KubernetesObject): SourceObject | undefined {
    const meta = ObjectMeta.safeParse(metadataOf(obj));
    if (!meta.success) {
      log.warn({ kind, name: obj.metadata?.name, namespace: obj.metadata?.namespace }, 'Ignored an object whose metadata we cannot read');
      return undefined;
    }
    const apiVersion = kind === 'Secret' ? 'v1' : API_VERSION;
    return { kind, metadata: meta.data, raw: { ...(obj as Record<string, unknown>), apiVersion, kind, metadata: meta.data } };
  }

  /** Keeps the newest version of an object: a write's response and the informer may arrive in either order. */
  function put(obj: SourceObject): boolean {
    const map = objects.get(obj.kind);
    if (!map) return false;
    const id = slot(obj.metadata.namespace, obj.metadata.name);
    const had = map.get(id);
    if (had && had.metadata.uid === obj.metadata.uid && !newerVersion(obj.metadata.resourceVersion, had.metadata.resourceVersion))
      return false;
    map.set(id, obj);
    return true;
  }

  function connectorOfToken(obj: KubernetesObject): string | undefined {
    return obj.metadata?.labels?.[LABEL_CONNECTOR];
  }

  function onChange(feed: Feed, type: 'add' | 'update' | 'delete', obj: KubernetesObject): void {
    const namespace = obj.metadata?.namespace;
    const name = obj.metadata?.name;
    if (!namespace || !name) return;
    if (feed.role === 'token') {
      const connector = connectorOfToken(obj);
      if (!connector || name !== tokenSecretName(connector)) return;
      const id = slot(namespace, connector);
      const record = tokenRecord(obj);
      const mine = written.get(id);
      // A deletion is the informer's newest view even when it reports an older version (a relist
      // after 410 reports what it last saw): what this replica wrote is gone too.
      if (type === 'delete' || (mine && !newerVersion(mine.resourceVersion, record.resourceVersion))) written.delete(id);
      if (type === 'delete') tokens.delete(id);
      else tokens.set(id, record);
      options.enqueue({ kind: 'Connector', namespace, name: connector });
      return;
    }
    if (type === 'delete') {
      objects.get(feed.kind)?.delete(slot(namespace, name));
    } else {
      const source = toSource(feed.kind, obj);
      if (!source || !put(source)) return;
    }
    options.enqueue({ kind: feed.kind, namespace, name });
  }

  function listFor(feed: Feed): () => Promise<KubernetesListObject<KubernetesObject>> {
    const labelSelector = feed.labelSelector;
    if (feed.kind === 'Secret') {
      return feed.namespace === undefined
        ? () => clients.core.listSecretForAllNamespaces({ ...(labelSelector ? { labelSelector } : {}) })
        : () => clients.core.listNamespacedSecret({ namespace: feed.namespace as string, ...(labelSelector ? { labelSelector } : {}) });
    }
    const plural = PLURALS[feed.kind as CustomKind];
    return feed.namespace === undefined
      ? async () =>
          (await clients.custom.listClusterCustomObject({
            group: GROUP,
            version: VERSION,
            plural,
          })) as KubernetesListObject<KubernetesObject>
      : async () =>
          (await clients.custom.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace: feed.namespace as string,
            plural,
          })) as KubernetesListObject<KubernetesObject>;
  }

  const feeds: Feed[] = [];
  for (const namespace of options.namespaces ?? [undefined]) {
    const suffix = namespace === undefined ? '' : ` in ${namespace}`;
    for (const kind of ['Rule', 'Connector', 'Bundle', 'Directory'] as const)
      feeds.push({ name: `${kind}${suffix}`, kind, role: 'object', namespace, labelSelector: undefined });
    feeds.push({ name: `Secret (API keys)${suffix}`, kind: 'Secret', role: 'object', namespace, labelSelector: `${LABEL_API_KEY}=true` });
    feeds.push({ name: `Secret (tokens)${suffix}`, kind: 'Secret', role: 'token', namespace, labelSelector: LABEL_CONNECTOR });
  }

  interface Entry {
    readonly feed: Feed;
    readonly informer: Informer<KubernetesObject>;
    listed: boolean;
    failures: number;
    /** Errors seen so far: a start that adds none reached the server and resets the backoff. */
    errors: number;
    readonly firstList: Promise<void>;
  }
  const entries: Entry[] = [];

  /** (Re)starts an informer. It resumes from its last resourceVersion, or lists when it has none. */
  function startEntry(entry: Entry, resolveFirst: () => void): void {
    if (stopped) return;
    const errorsBefore = entry.errors;
    entry.informer.start().then(
      () => {
        // A failed list or watch is reported through the error handler, which schedules the next attempt.
        if (entry.errors === errorsBefore) entry.failures = 0;
        if (entry.listed) resolveFirst();
      },
      (err: unknown) => log.warn({ feed: entry.feed.name, err: describeError(err) }, 'Watch failed to start'),
    );
  }

  for (const feed of feeds) {
    const list = listFor(feed);
    let resolveFirst: () => void = () => undefined;
    const firstList = new Promise<void>((resolve) => {
      resolveFirst = resolve;
    });
    const holder: { entry?: Entry } = {};
    const informer = makeInformer(
      clients.config,
      collectionPath(feed.kind, feed.namespace),
      async () => {
        const result = await list();
        if (holder.entry) {
          holder.entry.listed = true;
          holder.entry.failures = 0;
        }
        options.onList?.(feed.name);
        return result;
      },
      feed.labelSelector,
    );
    const entry: Entry = { feed, informer, listed: false, failures: 0, errors: 0, firstList };
    holder.entry = entry;
    informer.on('add', (o) => onChange(feed, 'add', o));
    informer.on('update', (o) => onChange(feed, 'update', o));
    informer.on('delete', (o) => onChange(feed, 'delete', o));
    informer.on('error', (err: unknown) => {
      if (stopped) return;
      entry.errors += 1;
      entry.failures += 1;
      const delayMs = Math.min((options.restartMs ?? 1000) * 2 ** (entry.failures - 1), options.maxRestartMs ?? 30_000);
      log.warn(
        { feed: feed.name, err: describeError(err), attempt: entry.failures, delayMs, ...hintFor(feed, err) },
        'Watch stopped; restarting it',
      );
      options.onWatchRestart?.(feed.name);
      const timer = setTimeout(() => {
        timers.delete(timer);
        startEntry(entry, resolveFirst);
      }, delayMs);
      timers.add(timer);
    });
    entries.push(entry);
    starters.set(entry, () => startEntry(entry, resolveFirst));
  }

  function currentToken(namespace: string, connector: string): TokenRecord | undefined {
    const id = slot(namespace, connector);
    return written.get(id) ?? tokens.get(id);
  }

  function secretBody(owner: SourceObject, secret: TokenSecret, resourceVersion: string | undefined): V1Secret {
    const { namespace, name, uid } = owner.metadata;
    if (uid === undefined) throw new Error(`Connector ${namespace}/${name} has no uid: cannot own its token Secret`);
    const ca = options.caBundle?.();
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: tokenSecretName(name),
        namespace,
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
        labels: { [LABEL_CONNECTOR]: name, [LABEL_MANAGED_BY]: MANAGED_BY },
        annotations: { [ANNOTATION_ROTATION]: String(secret.rotation), [ANNOTATION_ISSUED_AT]: secret.issuedAt },
        // Garbage-collected with its Connector. No blockOwnerDeletion: that would need finalizer rights on Connectors.
        ownerReferences: [{ apiVersion: API_VERSION, kind: 'Connector', name, uid, controller: true }],
      },
      data: {
        ...(secret.token === undefined ? {} : { token: Buffer.from(secret.token, 'utf8').toString('base64') }),
        ...(ca === undefined ? {} : { [CA_KEY]: Buffer.from(ca, 'utf8').toString('base64') }),
      },
    };
  }

  /** Whether a Secret is a token Secret this operator manages for `connector`. */
  function isOurs(secret: V1Secret, connector: string): boolean {
    return secret.metadata?.labels?.[LABEL_CONNECTOR] === connector;
  }

  /**
   * Creates or replaces a token Secret. A conflict is never answered by writing the same body again
   * (it was computed from what is now stale): the fresh Secret is remembered and the reconcile fails,
   * so the controller decides again from it. A Secret of that name that is not ours is left alone.
   */
  async function putSecret(namespace: string, connector: string, body: (resourceVersion: string | undefined) => V1Secret): Promise<void> {
    const known = currentToken(namespace, connector);
    const name = tokenSecretName(connector);
    const id = slot(namespace, connector);
    try {
      const res = known
        ? await clients.core.replaceNamespacedSecret({ name, namespace, body: body(known.resourceVersion) })
        : await clients.core.createNamespacedSecret({ namespace, body: body(undefined) });
      written.set(id, tokenRecord(res));
      return;
    } catch (err) {
      const status = statusOf(err);
      if (status !== 409 && status !== 404) throw new Error(`Failed to write Secret ${namespace}/${name}: ${describeError(err)}`);
    }
    let fresh: V1Secret | undefined;
    try {
      fresh = await clients.core.readNamespacedSecret({ name, namespace });
    } catch (readErr) {
      if (statusOf(readErr) !== 404) throw new Error(`Failed to read Secret ${namespace}/${name}: ${describeError(readErr)}`);
    }
    if (fresh && !isOurs(fresh, connector)) {
      throw new TokenSecretConflict(
        `Secret ${name} already exists and is not a token Secret of this connector (no label ${LABEL_CONNECTOR}: ${connector}); it is left alone. Delete or rename it, or rename the Connector.`,
      );
    }
    if (fresh) written.set(id, tokenRecord(fresh));
    else {
      written.delete(id);
      tokens.delete(id);
    }
    throw new Error(`Secret ${namespace}/${name} changed while it was written; deciding again from the current one`);
  }

  const writer: ClusterWriter = {
    readTokenSecret(namespace, connector) {
      const record = currentToken(namespace, connector);
      if (!record) return undefined;
      // A Secret left by an earlier Connector of the same name (not yet collected) is not this one's.
      const uid = objects.get('Connector')?.get(slot(namespace, connector))?.metadata.uid;
      if (uid !== undefined && record.ownerUids.length > 0 && !record.ownerUids.includes(uid)) return undefined;
      const encoded = record.data['token'];
      const token = encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8').trim() || undefined;
      const rotation = Number(record.annotations[ANNOTATION_ROTATION]);
      return {
        token,
        // An unreadable annotation never matches a spec: a fresh token is issued.
        rotation: Number.isInteger(rotation) ? rotation : -1,
        issuedAt: record.annotations[ANNOTATION_ISSUED_AT] ?? '',
      };
    },
    async writeTokenSecret(owner, secret) {
      await putSecret(owner.metadata.namespace, owner.metadata.name, (rv) => secretBody(owner, secret, rv));
    },
    async deleteTokenSecret(namespace, connector) {
      // The garbage collector deletes it through its ownerReference; only our memory of it goes.
      written.delete(slot(namespace, connector));
    },
    async writeStatus(key, status) {
      const obj = objects.get(key.kind)?.get(slot(key.namespace, key.name));
      if (!obj || key.kind === 'Secret') return;
      try {
        const res: unknown = await clients.custom.replaceNamespacedCustomObjectStatus({
          group: GROUP,
          version: VERSION,
          namespace: key.namespace,
          plural: PLURALS[key.kind],
          name: key.name,
          body: { ...obj.raw, status },
        });
        const updated = toSource(key.kind, res as KubernetesObject);
        // Only while the object is still there: the informer may have reported it deleted meanwhile.
        const still = objects.get(key.kind)?.get(slot(key.namespace, key.name));
        if (updated && still?.metadata.uid === updated.metadata.uid) put(updated);
      } catch (err) {
        if (statusOf(err) === 404) return;
        throw new Error(`Failed to write the status of ${keyText(key)}: ${describeError(err)}`);
      }
    },
  };

  writer.recordEvent = (obj, event) => {
    const { namespace, name, uid, resourceVersion } = obj.metadata;
    const time = new Date();
    clients.core
      .createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: `${name.slice(0, 253 - 17)}.${randomBytes(8).toString('hex')}`, namespace },
          involvedObject: {
            apiVersion: obj.kind === 'Secret' ? 'v1' : API_VERSION,
            kind: obj.kind,
            name,
            namespace,
            ...(uid ? { uid } : {}),
            ...(resourceVersion ? { resourceVersion } : {}),
          },
          type: event.type,
          reason: event.reason,
          message: event.message.slice(0, 1024),
          firstTimestamp: time,
          lastTimestamp: time,
          count: 1,
          source: { component: MANAGED_BY },
          reportingComponent: MANAGED_BY,
          reportingInstance: options.identity ?? '',
        },
      })
      .catch((err: unknown) =>
        log.warn(
          { err: describeError(err), kind: obj.kind, name: `${namespace}/${name}`, reason: event.reason },
          'Could not record an Event',
        ),
      );
  };

  return {
    writer,
    get(kind, namespace, name) {
      return objects.get(kind)?.get(slot(namespace, name));
    },
    list(kind, namespace) {
      const all = [...(objects.get(kind)?.values() ?? [])];
      return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
    },
    keys() {
      const out: ObjectKey[] = [];
      for (const [kind, map] of objects)
        for (const o of map.values()) out.push({ kind, namespace: o.metadata.namespace, name: o.metadata.name });
      return out;
    },
    async start() {
      for (const start of starters.values()) start();
      await Promise.all(entries.map((e) => e.firstList));
    },
    async syncCa() {
      const ca = options.caBundle?.();
      if (ca === undefined) return;
      const encoded = Buffer.from(ca, 'utf8').toString('base64');
      for (const id of new Set([...tokens.keys(), ...written.keys()])) {
        const [namespace, connector] = id.split('/') as [string, string];
        if ((written.get(id) ?? tokens.get(id))?.data[CA_KEY] === encoded) continue;
        const name = tokenSecretName(connector);
        // Only ca.crt changes, on the Secret as the server holds it now: a token is never written back.
        for (let attempt = 1; attempt <= 3; attempt++) {
          try {
            const fresh = await clients.core.readNamespacedSecret({ name, namespace });
            if (!isOurs(fresh, connector) || fresh.data?.[CA_KEY] === encoded) break;
            const res = await clients.core.replaceNamespacedSecret({
              name,
              namespace,
              body: { ...fresh, data: { ...(fresh.data ?? {}), [CA_KEY]: encoded } },
            });
            written.set(id, tokenRecord(res));
            log.info({ secret: `${namespace}/${name}` }, 'Wrote the current CA into a token Secret');
            break;
          } catch (err) {
            if (statusOf(err) === 404) break;
            if (statusOf(err) !== 409 || attempt === 3)
              throw new Error(`Failed to write the CA into Secret ${namespace}/${name}: ${describeError(err)}`);
          }
        }
      }
    },
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.all(entries.map((e) => e.informer.stop()));
    },
  };
}
