// The ConfigMap `acl-opa` in each tenant namespace, written by the leader: what an OPA sidecar mounts
// (`<bundle>.yaml`, its whole configuration, and `<kid>.pem`, each key that signs). This module only
// keeps the cluster equal to the wanted contents, writing a ConfigMap only when its data changed and
// deleting it when its tenant wants none; what they hold is the caller's (modes/opa-configmaps.ts).
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { coalesce } from '../work/index.ts';
import { describeError, LABEL_MANAGED_BY, MANAGED_BY, statusOf } from './client.ts';

/** The name of the ConfigMap in every tenant namespace. */
export const OPA_CONFIGMAP = 'acl-opa';

/** Namespace → the data its ConfigMap should hold, made when asked (the same object while unchanged). */
export type WantedConfigMaps = ReadonlyMap<string, () => Readonly<Record<string, string>>>;

/** Work done in one turn of the event loop before the pass gives it back (decisions wait meanwhile). */
const SLICE_MS = 10;

export interface OpaConfigMapsOptions {
  readonly core: CoreV1Api;
  /** The namespaces watched (undefined: all), where leftovers are looked for. */
  readonly namespaces: readonly string[] | undefined;
  readonly log: Logger;
  /** What every namespace should hold now (read when a sync runs, so syncs asked for meanwhile collapse). */
  wanted(): WantedConfigMaps;
}

export interface OpaConfigMaps {
  /** Writes what differs from what this replica last wrote; resolves when done (never rejects). */
  sync(): Promise<void>;
  /** Forgets what was written (a new leader): the next sync lists the cluster's ConfigMaps first. */
  reset(): void;
}

/** Fingerprints by data object: the caller hands the same object while a tenant's data is unchanged. */
const prints = new WeakMap<object, string>();

function fingerprint(data: Readonly<Record<string, string>>): string {
  let print = prints.get(data);
  if (print === undefined) {
    print = JSON.stringify(
      Object.keys(data)
        .sort()
        .map((k) => [k, data[k]]),
    );
    prints.set(data, print);
  }
  return print;
}

function body(namespace: string, data: Readonly<Record<string, string>>, resourceVersion: string | undefined): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: OPA_CONFIGMAP,
      namespace,
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    data: { ...data },
  };
}

/** Keeps `acl-opa` in every tenant namespace equal to `wanted()` (leader only: the caller decides when to sync). */
export function createOpaConfigMaps(o: OpaConfigMapsOptions): OpaConfigMaps {
  /** Namespace → fingerprint of what its ConfigMap holds; undefined until listed. */
  let written: Map<string, string> | undefined;
  const warned = new Set<string>();

  const list = async (): Promise<Map<string, string>> => {
    const found = new Map<string, string>();
    const labelSelector = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
    const lists = o.namespaces
      ? await Promise.all(o.namespaces.map((namespace) => o.core.listNamespacedConfigMap({ namespace, labelSelector })))
      : [await o.core.listConfigMapForAllNamespaces({ labelSelector })];
    for (const cm of lists.flatMap((l) => l.items)) {
      if (cm.metadata?.name === OPA_CONFIGMAP && cm.metadata.namespace) found.set(cm.metadata.namespace, fingerprint(cm.data ?? {}));
    }
    return found;
  };

  /** Creates or replaces one ConfigMap; false when one of that name is not ours (left alone, never deleted). */
  const write = async (namespace: string, data: Readonly<Record<string, string>>): Promise<boolean> => {
    let existing: V1ConfigMap | undefined;
    try {
      existing = await o.core.readNamespacedConfigMap({ name: OPA_CONFIGMAP, namespace });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    if (existing && existing.metadata?.labels?.[LABEL_MANAGED_BY] !== MANAGED_BY) {
      if (!warned.has(namespace))
        o.log.warn({ configMap: `${namespace}/${OPA_CONFIGMAP}` }, 'Left alone a ConfigMap acl-opa that acl-operator did not write');
      warned.add(namespace);
      return false;
    }
    if (!existing) await o.core.createNamespacedConfigMap({ namespace, body: body(namespace, data, undefined) });
    else if (fingerprint(existing.data ?? {}) !== fingerprint(data))
      await o.core.replaceNamespacedConfigMap({
        name: OPA_CONFIGMAP,
        namespace,
        body: body(namespace, data, existing.metadata?.resourceVersion),
      });
    o.log.info({ configMap: `${namespace}/${OPA_CONFIGMAP}`, keys: Object.keys(data).sort() }, 'Wrote the OPA configurations of a tenant');
    return true;
  };

  const pass = async (): Promise<void> => {
    written ??= await list();
    const wanted = o.wanted();
    let sliceStart = performance.now();
    for (const [namespace, dataOf] of wanted) {
      if (performance.now() - sliceStart > SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
      const data = dataOf();
      const print = fingerprint(data);
      if (written.get(namespace) === print) continue;
      try {
        if (await write(namespace, data)) written.set(namespace, print);
      } catch (err) {
        // Retried at the next sync (a conflict included: it reads the ConfigMap again).
        written.delete(namespace);
        o.log.warn(
          { configMap: `${namespace}/${OPA_CONFIGMAP}`, err: describeError(err) },
          'Failed to write the OPA configurations of a tenant',
        );
      }
    }
    for (const namespace of [...written.keys()]) {
      if (wanted.has(namespace)) continue;
      try {
        await o.core.deleteNamespacedConfigMap({ name: OPA_CONFIGMAP, namespace });
        o.log.info({ configMap: `${namespace}/${OPA_CONFIGMAP}` }, 'Deleted the OPA configurations of a tenant with no bundle left');
      } catch (err) {
        if (statusOf(err) !== 404) {
          o.log.warn(
            { configMap: `${namespace}/${OPA_CONFIGMAP}`, err: describeError(err) },
            'Failed to delete the OPA configurations of a tenant',
          );
          continue;
        }
      }
      written.delete(namespace);
    }
  };

  // Syncs asked for while one runs collapse into one more pass after it.
  const sync = coalesce(() =>
    pass().catch((err: unknown) => {
      written = undefined;
      o.log.warn({ err: describeError(err) }, 'Failed to list the OPA configuration ConfigMaps');
    }),
  );

  return {
    sync,
    reset() {
      written = undefined;
    },
  };
}
