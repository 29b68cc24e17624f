// Kubernetes mode's bundle signing, wired: the holder the controller signs from (unsigned with
// --unsigned-bundles), the key Secret that fills it (kube/signing-key.ts), the question it asks the
// fleet before retiring a key, and the `acl-opa` ConfigMaps' contents (one OPA configuration per
// Bundle of the tenant and the public keys), written by the leader on every publish and ring change.
import type { Config } from '../config.ts';
import { kubePublicUrl } from '../config.ts';
import { createSigningHolder, type SigningHolder, type SigningState } from '../controller/index.ts';
import {
  createOpaConfigMaps,
  createSigningKeySecret,
  type OpaConfigMaps,
  type SigningKeySecret,
  type WantedConfigMaps,
} from '../kube/index.ts';
import { retirementDue } from '../fleet/index.ts';
import { opaConfig, type OpaSigning } from '../opa/index.ts';
import { ringKeys } from '../signing/index.ts';
import type { Snapshot } from '../store/index.ts';

type TenantSnapshot = NonNullable<ReturnType<Snapshot['tenants']['get']>>;
import type { Base } from './core.ts';
import type { Cluster } from './cluster.ts';

/** Where the operator's token Secret (keys `token`, `ca.crt`) is mounted in a sidecar (deploy/examples/opa-sidecar.yaml). */
export const SIDECAR_MOUNT = '/var/run/acl-operator';
/** The sidecar's emptyDir for OPA's persisted bundle (a read-only root filesystem cannot hold OPA's default). */
export const SIDECAR_PERSISTENCE = '/var/opa';

/** The URL in-cluster sidecars reach the operator's Service at. */
export function sidecarUrl(config: Config, namespace: string): string {
  const https =
    kubePublicUrl(config.kube.serviceName, namespace, config.listen.port) ?? `https://${config.kube.serviceName}.${namespace}.svc`;
  return config.tls.mode === 'insecure' ? https.replace(/^https:/, 'http:') : https;
}

/** The signing block of every configuration printed while `state` holds: undefined when unsigned. */
export function opaSigningOf(state: SigningState): OpaSigning | undefined {
  if (state.unsigned || !state.ring) return undefined;
  const keys = ringKeys(state.ring);
  return { keyid: state.ring.current.kid, keys: keys.map((k) => ({ kid: k.kid, publicKeyPem: k.publicKeyPem })) };
}

/** A tenant's `acl-opa` data: `<bundle>.yaml` for each Bundle whose Connector exists, `<kid>.pem` for each signing key. */
export function tenantOpaData(
  tenant: TenantSnapshot,
  signing: OpaSigning | undefined,
  url: string,
  tls: boolean,
): Record<string, string> | undefined {
  const data: Record<string, string> = {};
  for (const b of [...tenant.bundles.values()].sort((x, y) => x.name.localeCompare(y.name))) {
    if (!tenant.connectors.has(b.connector)) continue;
    data[`${b.name}.yaml`] = opaConfig({
      url,
      caFile: tls ? `${SIDECAR_MOUNT}/ca.crt` : undefined,
      tokenFile: `${SIDECAR_MOUNT}/token`,
      tenant: tenant.tenant,
      connector: b.connector,
      bundle: b.name,
      signing,
      persistenceDirectory: SIDECAR_PERSISTENCE,
      literalPaths: true,
    });
  }
  if (Object.keys(data).length === 0) return undefined;
  for (const k of signing?.keys ?? []) data[`${k.kid}.pem`] = k.publicKeyPem;
  return data;
}

/**
 * Every tenant's `acl-opa` data for a snapshot, printed only when the writer asks for it (a tenant's
 * text is printed again only when its bundles, their connectors or the keys changed; a new revision
 * alone changes nothing here). Printing is the cost: 2,000 configurations took 340 ms, which the
 * writer spreads over turns of the event loop.
 */
export function createWantedConfigMaps(url: string, tls: boolean): (snapshot: Snapshot, state: SigningState) => WantedConfigMaps {
  const printed = new Map<string, { key: string; data: Record<string, string> | undefined }>();
  return (snapshot, state) => {
    const signing = opaSigningOf(state);
    const kids = signing ? signing.keys.map((k) => k.kid).join(',') : 'unsigned';
    const wanted = new Map<string, () => Record<string, string>>();
    for (const t of snapshot.tenants.values()) {
      const served = [...t.bundles.values()].filter((b) => t.connectors.has(b.connector));
      if (served.length === 0) continue;
      const key = `${kids}|${served
        .map((b) => `${b.name}:${b.connector}`)
        .sort()
        .join(',')}`;
      wanted.set(t.tenant, () => {
        let entry = printed.get(t.tenant);
        if (entry?.key !== key) {
          entry = { key, data: tenantOpaData(t, signing, url, tls) };
          printed.set(t.tenant, entry);
        }
        return entry.data ?? {};
      });
    }
    for (const tenant of printed.keys()) if (!wanted.has(tenant)) printed.delete(tenant);
    return wanted;
  };
}

export interface KubeSigning {
  readonly holder: SigningHolder;
  /** undefined with --unsigned-bundles. */
  readonly keySecret: SigningKeySecret | undefined;
  readonly configMaps: OpaConfigMaps;
  /** Writes the ConfigMaps when leading (a publish, a ring change). */
  syncConfigMaps(): void;
  /** Lists the ConfigMaps again and writes back any edited or deleted by hand (the periodic resync). */
  resync(): void;
  /** Subscribes to publishes, ring and agent changes, and reads the key Secret every few seconds. */
  start(): void;
  /** The API listener opened: status reports are heard from now (retirement waits a whole agent window). */
  listening(): void;
  stop(): void;
}

/** The signing parts of Kubernetes mode; nothing runs until `start` (the first read is `keySecret.check()`). */
export function createKubeSigning(
  base: Base,
  cluster: Pick<Cluster, 'clients' | 'namespace' | 'elector' | 'onLeading'>,
  options: { readonly signingRefreshMs?: number } = {},
): KubeSigning {
  const { config, store, fleet } = base;
  const log = base.log.child({ module: 'signing' });
  const holder = createSigningHolder(
    config.unsignedBundles ? { unsigned: true } : { unsigned: false, ring: undefined, problem: undefined },
  );
  const leading = (): boolean => cluster.elector.isLeader();
  /** When the API listener opened (status reports heard since); undefined before. */
  let listeningSinceMs: number | undefined;
  const keySecret = config.unsignedBundles
    ? undefined
    : createSigningKeySecret({
        core: cluster.clients.core,
        namespace: cluster.namespace,
        name: config.kube.signingKeySecret,
        holder,
        log,
        leading,
        retirementDue: (kid) => {
          if (listeningSinceMs === undefined) return false;
          const bundles = [...store.snapshot().tenants.values()].flatMap((t) => [...t.bundles.values()]);
          return retirementDue(fleet.agents, bundles, kid, base.nowMs(), listeningSinceMs).due;
        },
        ...(options.signingRefreshMs !== undefined ? { refreshMs: options.signingRefreshMs } : {}),
      });
  const wanted = createWantedConfigMaps(sidecarUrl(config, cluster.namespace), config.tls.mode !== 'insecure');
  const configMaps = createOpaConfigMaps({
    core: cluster.clients.core,
    namespaces: config.kube.namespaces,
    log,
    wanted: () => wanted(store.snapshot(), holder.get()),
  });
  const syncConfigMaps = (): void => {
    const state = holder.get();
    // Signed, but no good key was ever read: a configuration printed now would verify nothing.
    if (!leading() || (!state.unsigned && !state.ring)) return;
    void configMaps.sync();
  };
  // A new leader writes what its predecessor may have left undone, from the cluster as it is.
  cluster.onLeading(() => {
    configMaps.reset();
    void keySecret?.check();
    syncConfigMaps();
  });
  const unsubscribe: (() => void)[] = [];
  let agentCheck: NodeJS.Timeout | undefined;
  return {
    holder,
    keySecret,
    configMaps,
    syncConfigMaps,
    resync() {
      configMaps.reset();
      syncConfigMaps();
    },
    start() {
      unsubscribe.push(store.onBundleChange(syncConfigMaps), holder.onChange(syncConfigMaps));
      // During a rotation an agent moving to the current key may make retirement due: checked then,
      // at most once a second however much the fleet churns (each check reads the Secret).
      unsubscribe.push(
        fleet.agents.onChange(() => {
          const s = holder.get();
          if (s.unsigned || !s.ring?.previous || !leading() || agentCheck) return;
          agentCheck = setTimeout(() => {
            agentCheck = undefined;
            void keySecret?.check();
          }, 1000);
          agentCheck.unref();
        }),
      );
      keySecret?.start();
    },
    listening() {
      listeningSinceMs ??= base.nowMs();
    },
    stop() {
      for (const u of unsubscribe.splice(0)) u();
      if (agentCheck) clearTimeout(agentCheck);
      keySecret?.stop();
    },
  };
}
