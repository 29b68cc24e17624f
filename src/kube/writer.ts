// The cluster source's ClusterWriter: token Secrets (secrets.ts), status through the /status
// subresource, and Events. A status write's answer goes into the cache, so our own writes never
// look like changes to reconcile.
import { randomBytes } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { API_VERSION, GROUP, VERSION } from '../api/index.ts';
import { keyText, type ClusterWriter, type ObjectEvent, type ObjectKey, type SourceObject } from '../controller/index.ts';
import { getObject, putObject, slot, toSource, type KubeCache } from './cache.ts';
import { describeError, MANAGED_BY, PLURALS, statusOf } from './client.ts';
import { readTokenSecret, writeTokenSecret, type SecretsOptions } from './secrets.ts';

export interface WriterOptions extends SecretsOptions {
  /** This replica's name, as the reporting instance of Events. */
  readonly identity?: string;
  /** The clock, in ms since the epoch (default Date.now): the time an Event carries. */
  readonly now?: () => number;
}

/** Replaces an object's status; a 404 (the object is gone) is no error. */
async function writeStatus(
  options: WriterOptions,
  cache: KubeCache,
  key: ObjectKey,
  status: Readonly<Record<string, unknown>>,
): Promise<void> {
  const obj = getObject(cache, key.kind, key.namespace, key.name);
  if (!obj || key.kind === 'Secret') return;
  try {
    const res: unknown = await options.clients.custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      namespace: key.namespace,
      plural: PLURALS[key.kind],
      name: key.name,
      body: { ...obj.raw, status },
    });
    const updated = toSource(key.kind, res as KubernetesObject, options.log);
    // Only while the object is still there: the informer may have reported it deleted meanwhile.
    const still = getObject(cache, key.kind, key.namespace, key.name);
    if (updated && still?.metadata.uid === updated.metadata.uid) putObject(cache, updated);
  } catch (err) {
    if (statusOf(err) === 404) return;
    throw new Error(`Failed to write the status of ${keyText(key)}: ${describeError(err)}`);
  }
}

/** Creates a Kubernetes Event on an object, best effort: a failure is logged and forgotten. */
function recordEvent(options: WriterOptions, obj: SourceObject, event: ObjectEvent): void {
  const { namespace, name, uid, resourceVersion } = obj.metadata;
  const now = options.now ?? Date.now;
  const time = new Date(now());
  options.clients.core
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
      options.log.warn(
        { err: describeError(err), kind: obj.kind, name: `${namespace}/${name}`, reason: event.reason },
        'Could not record an Event',
      ),
    );
}

/** The writer the controller writes through, keeping the cache up to date with what it wrote. */
export function createWriter(options: WriterOptions, cache: KubeCache): ClusterWriter {
  return {
    readTokenSecret: (namespace, connector) => readTokenSecret(cache, namespace, connector),
    writeTokenSecret: (owner, secret) => writeTokenSecret(options, cache, owner, secret),
    async deleteTokenSecret(namespace, connector) {
      // The garbage collector deletes it through its ownerReference; only our memory of it goes.
      cache.written.delete(slot(namespace, connector));
    },
    writeStatus: (key, status) => writeStatus(options, cache, key, status),
    recordEvent: (obj, event) => recordEvent(options, obj, event),
  };
}
