// The cluster source's feeds: one informer per kind and namespace (two for Secrets: API keys and
// tokens), its events applied to the cache and their keys enqueued. Informers stop on error: each is
// restarted with doubling backoff, and client-node relists by itself after 410 Gone (deleted
// objects are reported by the relist).
import { makeInformer, type Informer, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { GROUP, VERSION } from '../api/index.ts';
import { LABEL_API_KEY, LABEL_CONNECTOR, type Kind, type ObjectKey } from '../controller/index.ts';
import { applyObjectChange, applyTokenChange, releaseInformerCopy, type ChangeType, type KubeCache } from './cache.ts';
import { collectionPath, describeError, PLURALS, statusOf, type CustomKind, type KubeClients } from './client.ts';

export interface FeedOptions {
  readonly clients: KubeClients;
  /** undefined: every namespace. */
  readonly namespaces: readonly string[] | undefined;
  readonly log: Logger;
  enqueue(key: ObjectKey): void;
  /** A watch failed and will be restarted (for the watch restarts metric). */
  onWatchRestart?(feed: string): void;
  /** A feed listed its collection: at start, and again after 410 Gone. */
  onList?(feed: string): void;
  /** First restart delay after a failed watch (default 1 s), doubled up to maxRestartMs (default 30 s). */
  readonly restartMs?: number;
  readonly maxRestartMs?: number;
}

type Role = 'object' | 'token';
interface Feed {
  readonly name: string;
  readonly kind: Kind;
  readonly role: Role;
  readonly namespace: string | undefined;
  readonly labelSelector: string | undefined;
}

interface Progress {
  listed: boolean;
  failures: number;
  /** Errors seen so far: a start that adds none reached the server and resets the backoff. */
  errors: number;
}

interface Entry {
  readonly feed: Feed;
  readonly informer: Informer<KubernetesObject>;
  readonly progress: Progress;
  readonly firstList: Promise<void>;
  readonly resolveFirst: () => void;
}

export interface Feeds {
  readonly options: FeedOptions;
  readonly cache: KubeCache;
  readonly entries: Entry[];
  readonly timers: Set<NodeJS.Timeout>;
  stopped: boolean;
}

/** Every feed to watch: the custom kinds, API key Secrets and token Secrets, per namespace or across all. */
function feedsFor(namespaces: readonly string[] | undefined): Feed[] {
  const feeds: Feed[] = [];
  for (const namespace of namespaces ?? [undefined]) {
    const suffix = namespace === undefined ? '' : ` in ${namespace}`;
    for (const kind of ['Rule', 'Connector', 'Bundle', 'Directory'] as const)
      feeds.push({ name: `${kind}${suffix}`, kind, role: 'object', namespace, labelSelector: undefined });
    feeds.push({ name: `Secret (API keys)${suffix}`, kind: 'Secret', role: 'object', namespace, labelSelector: `${LABEL_API_KEY}=true` });
    feeds.push({ name: `Secret (tokens)${suffix}`, kind: 'Secret', role: 'token', namespace, labelSelector: LABEL_CONNECTOR });
  }
  return feeds;
}

function listFor(clients: KubeClients, feed: Feed): () => Promise<KubernetesListObject<KubernetesObject>> {
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

/** What a person can do about a list or watch that keeps failing. */
function hintFor(feed: Feed, err: unknown): { hint?: string } {
  const status = statusOf(err);
  if (status === 404 && feed.kind !== 'Secret') return { hint: 'the CustomResourceDefinitions are not installed: kubectl apply -f crds/' };
  if (status === 403)
    return { hint: `forbidden: the operator's RBAC does not allow this (deploy/20-rbac.yaml; with --namespaces, deploy/namespaced/)` };
  if (status === 401) return { hint: 'the API server refused the credentials: check the kubeconfig or the service account token' };
  return {};
}

function onChange(state: Feeds, feed: Feed, type: ChangeType, obj: KubernetesObject): void {
  const { cache, options } = state;
  const key = feed.role === 'token' ? applyTokenChange(cache, type, obj) : applyObjectChange(cache, feed.kind, type, obj, options.log);
  releaseInformerCopy(obj);
  if (key) options.enqueue(key);
}

/** (Re)starts an informer. It resumes from its last resourceVersion, or lists when it has none. */
function startEntry(state: Feeds, entry: Entry): void {
  if (state.stopped) return;
  const { progress } = entry;
  const errorsBefore = progress.errors;
  entry.informer.start().then(
    () => {
      // A failed list or watch is reported through the error handler, which schedules the next attempt.
      if (progress.errors === errorsBefore) progress.failures = 0;
      if (progress.listed) entry.resolveFirst();
    },
    (err: unknown) => state.options.log.warn({ feed: entry.feed.name, err: describeError(err) }, 'Watch failed to start'),
  );
}

/** Schedules the restart of a feed whose informer stopped, after the backoff its failures so far call for. */
function onError(state: Feeds, entry: Entry, err: unknown): void {
  if (state.stopped) return;
  const { options, timers } = state;
  const { feed, progress } = entry;
  progress.errors += 1;
  progress.failures += 1;
  const delayMs = Math.min((options.restartMs ?? 1000) * 2 ** (progress.failures - 1), options.maxRestartMs ?? 30_000);
  options.log.warn(
    { feed: feed.name, err: describeError(err), attempt: progress.failures, delayMs, ...hintFor(feed, err) },
    'Watch stopped; restarting it',
  );
  options.onWatchRestart?.(feed.name);
  const timer = setTimeout(() => {
    timers.delete(timer);
    startEntry(state, entry);
  }, delayMs);
  timers.add(timer);
}

function createEntry(state: Feeds, feed: Feed): Entry {
  const { options } = state;
  const list = listFor(options.clients, feed);
  const progress: Progress = { listed: false, failures: 0, errors: 0 };
  let resolveFirst: () => void = () => undefined;
  const firstList = new Promise<void>((resolve) => {
    resolveFirst = resolve;
  });
  const informer = makeInformer(
    options.clients.config,
    collectionPath(feed.kind, feed.namespace),
    async () => {
      const result = await list();
      progress.listed = true;
      progress.failures = 0;
      options.onList?.(feed.name);
      return result;
    },
    feed.labelSelector,
  );
  const entry: Entry = { feed, informer, progress, firstList, resolveFirst };
  informer.on('add', (o) => onChange(state, feed, 'add', o));
  informer.on('update', (o) => onChange(state, feed, 'update', o));
  informer.on('delete', (o) => onChange(state, feed, 'delete', o));
  informer.on('error', (err: unknown) => onError(state, entry, err));
  return entry;
}

/** An informer (not yet started) for every feed the options call for, feeding the cache. */
export function createFeeds(options: FeedOptions, cache: KubeCache): Feeds {
  const state: Feeds = { options, cache, entries: [], timers: new Set(), stopped: false };
  for (const feed of feedsFor(options.namespaces)) state.entries.push(createEntry(state, feed));
  return state;
}

/** Starts every informer; resolves once each has listed (and its objects were enqueued) once. */
export async function startFeeds(state: Feeds): Promise<void> {
  for (const entry of state.entries) startEntry(state, entry);
  await Promise.all(state.entries.map((e) => e.firstList));
}

/** Stops every informer and every pending restart. */
export async function stopFeeds(state: Feeds): Promise<void> {
  state.stopped = true;
  for (const t of state.timers) clearTimeout(t);
  state.timers.clear();
  await Promise.all(state.entries.map((e) => e.informer.stop()));
}
