// The cluster source: informers for Rules, Connectors, Bundles, Directories, API key Secrets and
// token Secrets feed our own object maps (ObjectReader) and the controller's queue; the writer
// (ClusterWriter) creates token Secrets and writes status. This module only assembles the parts:
// the cache (cache.ts), the feeds with their restarts (feeds.ts), and the writes (writer.ts, secrets.ts).
import type { ClusterWriter, ObjectKey, ObjectReader } from '../controller/index.ts';
import { createCache, getObject, listObjects, objectKeys } from './cache.ts';
import { createFeeds, startFeeds, stopFeeds, type FeedOptions } from './feeds.ts';
import { syncCa } from './secrets.ts';
import { createWriter, type WriterOptions } from './writer.ts';

export type KubeSourceOptions = FeedOptions & WriterOptions;

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

/** The cluster source over one cache: nothing is watched before start(). */
export function createKubeSource(options: KubeSourceOptions): KubeSource {
  const cache = createCache();
  const feeds = createFeeds(options, cache);
  return {
    writer: createWriter(options, cache),
    get: (kind, namespace, name) => getObject(cache, kind, namespace, name),
    list: (kind, namespace) => listObjects(cache, kind, namespace),
    keys: () => objectKeys(cache),
    start: () => startFeeds(feeds),
    syncCa: () => syncCa(options, cache),
    stop: () => stopFeeds(feeds),
  };
}
