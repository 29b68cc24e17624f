// Kubernetes mode's own parts, as top-level functions over one explicit state object: who this
// replica is, the Kubernetes source with the API listener's TLS Secret, the Lease elector (a new
// leader writes every object once, then the CA, into token Secrets and the webhook's caBundle), agent
// sharing between replicas, and their release.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { JudgedKind, WarningsFor } from '../admission/index.ts';
import type { Config, Tls } from '../config.ts';
import type { WorkQueue } from '../controller/index.ts';
import {
  type AgentSharing,
  createAgentSharing,
  createClients,
  createKubeSource,
  createLeaderElector,
  type KubeClients,
  type KubeSource,
  type LeaderElector,
  createWebhookCa,
  openTlsSecret,
  type TlsSecret,
  type WebhookCa,
  webhookApi,
} from '../kube/index.ts';
import type { AdmissionDeps } from '../http/index.ts';
import type { Base } from './core.ts';

/** The options of startOperator that shape the Kubernetes parts (tests shorten the timings). */
export interface ClusterOptions {
  readonly clients?: KubeClients;
  /** Lease timings (tests shorten them). */
  readonly leaseSeconds?: number;
  readonly renewMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryMs?: number;
  /** First delay before a failed watch is restarted (default 1 s). */
  readonly watchRestartMs?: number;
  readonly watchMaxRestartMs?: number;
  /** Shortest time between two publications of this replica's agents to its ConfigMap (default 2 s). */
  readonly agentPublishIntervalMs?: number;
  /** How often that ConfigMap is rewritten while it holds agents (default 30 s, at most a third of the expiry). */
  readonly agentHeartbeatMs?: number;
  /** How often the TLS Secret is re-read (default 60 s). */
  readonly tlsRefreshMs?: number;
  /** How often the signing key Secret is re-read (default 5 s). */
  readonly signingRefreshMs?: number;
}

export interface Cluster {
  readonly clients: KubeClients;
  readonly namespace: string;
  readonly identity: string;
  readonly source: KubeSource;
  /** The API listener's TLS Secret, with --tls-secret. */
  readonly tlsSecret: TlsSecret | undefined;
  readonly elector: LeaderElector;
  /** The webhook's caBundle upkeep, with --webhook-config and --tls-secret. */
  readonly webhookCa: WebhookCa | undefined;
  /** Calls `listener` each time this replica becomes the leader. */
  onLeading(listener: () => void): void;
}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** --operator-namespace, then POD_NAMESPACE, then the service account's namespace, then acl-system. */
function operatorNamespace(config: Config): string {
  if (config.kube.operatorNamespace) return config.kube.operatorNamespace;
  if (config.kube.pod.namespace) return config.kube.pod.namespace;
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || 'acl-system';
  } catch {
    return 'acl-system';
  }
}

/** Whether this replica holds the Lease now. */
export function isLeading(cluster: Pick<Cluster, 'elector'>): boolean {
  return cluster.elector.isLeader();
}

/**
 * Says who this replica is, reads (or creates) the TLS Secret, and makes the webhook's caBundle upkeep,
 * the Kubernetes source and the Lease elector; nothing is started.
 */
export async function openCluster(base: Base, options: ClusterOptions): Promise<Cluster> {
  const { config, log, metrics } = base;
  const clients = options.clients ?? createClients(config.kube.kubeconfig, config.kube.kubeconfigVariable);
  const namespace = operatorNamespace(config);
  const identity = config.kube.identity ?? config.kube.pod.name ?? `${hostname()}-${process.pid}`;
  log.info(
    {
      server: clients.config.getCurrentCluster()?.server,
      namespaces: config.kube.namespaces ?? 'all',
      operatorNamespace: namespace,
      identity,
    },
    'Starting the Kubernetes operator',
  );
  // The CA, once the leader, goes into token Secrets and the webhook's caBundle (also when it changes).
  const syncCa = (): void => {
    source.syncCa().catch((err: unknown) => log.error({ err }, 'Failed to write the CA into token Secrets'));
    void webhookCa?.sync();
  };
  const tlsSecret =
    config.tls.mode === 'secret'
      ? await openTlsSecret({
          core: clients.core,
          namespace,
          name: config.tls.name,
          serviceName: config.kube.serviceName,
          dir: join(config.stateDir, 'tls-secret'),
          log,
          now: () => base.now().getTime(),
          ...(options.tlsRefreshMs !== undefined ? { refreshMs: options.tlsRefreshMs } : {}),
          onCaChange: () => {
            if (elector.isLeader()) syncCa();
          },
        })
      : undefined;
  const webhookName = config.kube.webhookConfiguration;
  const webhookCa =
    tlsSecret && webhookName !== undefined
      ? createWebhookCa({ api: webhookApi(clients), name: webhookName, ca: () => tlsSecret.ca(), log: log.child({ module: 'webhook' }) })
      : undefined;
  const source = createKubeSource({
    clients,
    namespaces: config.kube.namespaces,
    log: log.child({ module: 'kube' }),
    identity,
    now: () => base.now().getTime(),
    enqueue: base.queue.enqueue,
    onWatchRestart: (feed) => metrics.watchRestarts.inc({ feed }),
    onList: (feed) => metrics.watchLists.inc({ feed }),
    caBundle: () => tlsSecret?.ca(),
    ...(options.watchRestartMs !== undefined ? { restartMs: options.watchRestartMs } : {}),
    ...(options.watchMaxRestartMs !== undefined ? { maxRestartMs: options.watchMaxRestartMs } : {}),
  });
  const leading: (() => void)[] = [];
  const elector = createElection({ clients, namespace, identity, source }, base, options, () => {
    syncCa();
    for (const listener of leading) listener();
  });
  return { clients, namespace, identity, source, tlsSecret, elector, webhookCa, onLeading: (l) => void leading.push(l) };
}

/** The leader writes the serving CA into the webhook's caBundle where it differs (also repairing a hand edit). */
function keepWebhookCa(cluster: Cluster): void {
  if (isLeading(cluster)) void cluster.webhookCa?.sync();
}

/** Every --resync-seconds: every object enqueued, the webhook's caBundle and the acl-opa ConfigMaps repaired. */
export function startResync(cluster: Cluster, base: Base, signing: { resync(): void }): NodeJS.Timeout {
  const timer = setInterval(() => {
    resyncAll(cluster.source, base.queue);
    keepWebhookCa(cluster);
    signing.resync();
  }, base.config.kube.resyncSeconds * 1000);
  timer.unref();
  return timer;
}

/** Enqueues every object the source holds (the periodic resync, and a new leader's first pass). */
function resyncAll(source: Pick<KubeSource, 'keys'>, queue: WorkQueue): void {
  for (const key of source.keys()) queue.enqueue(key);
}

/** The Lease elector; a new leader writes whatever its predecessor left undone: every object once, then the CA, the signing key Secret and the OPA ConfigMaps. */
function createElection(
  cluster: Pick<Cluster, 'clients' | 'namespace' | 'identity' | 'source'>,
  base: Base,
  options: ClusterOptions,
  nowLeading: () => void,
): LeaderElector {
  const { log, metrics } = base;
  return createLeaderElector({
    api: cluster.clients.coordination,
    namespace: cluster.namespace,
    name: 'acl-operator',
    identity: cluster.identity,
    log: log.child({ module: 'leader' }),
    ...(options.leaseSeconds !== undefined ? { leaseSeconds: options.leaseSeconds } : {}),
    ...(options.renewMs !== undefined ? { renewMs: options.renewMs } : {}),
    ...(options.renewDeadlineMs !== undefined ? { renewDeadlineMs: options.renewDeadlineMs } : {}),
    ...(options.retryMs !== undefined ? { retryMs: options.retryMs } : {}),
    onChange: (isLeader) => {
      metrics.leader.set(isLeader ? 1 : 0);
      if (!isLeader) return;
      resyncAll(cluster.source, base.queue);
      nowLeading();
    },
  });
}

/** Every replica hears some of the OPAs: they share what they hear, so RolledOut counts them all. */
export function createSharing(cluster: Cluster, base: Base, options: ClusterOptions): AgentSharing {
  const { name: podName, uid: podUid } = base.config.kube.pod;
  return createAgentSharing({
    clients: cluster.clients,
    namespace: cluster.namespace,
    identity: cluster.identity,
    registry: base.fleet.agents,
    shadow: base.shadowView,
    log: base.log.child({ module: 'agents' }),
    now: () => base.now().getTime(),
    leading: () => isLeading(cluster),
    ...(podName && podUid && podName === cluster.identity ? { pod: { name: podName, uid: podUid } } : {}),
    ...(options.agentPublishIntervalMs !== undefined ? { publishIntervalMs: options.agentPublishIntervalMs } : {}),
    ...(options.agentHeartbeatMs !== undefined ? { heartbeatMs: options.agentHeartbeatMs } : {}),
  });
}

const REVIEWED: readonly JudgedKind[] = ['Rule', 'Connector', 'Bundle', 'Directory'];

/** What the admission webhook reads: the tenant's objects in this replica's cache, and the warnings to give. */
export function clusterAdmission(cluster: Cluster, warningsFor: WarningsFor | undefined): AdmissionDeps {
  return {
    objectsOf: (namespace) =>
      REVIEWED.flatMap((kind) => cluster.source.list(kind, namespace).map((o) => ({ kind, namespace, name: o.metadata.name, raw: o.raw }))),
    ...(warningsFor ? { warningsFor } : {}),
  };
}

/** The API listener's TLS: the Secret's files in Kubernetes mode, else what the flags say. */
export function clusterTls(cluster: Cluster, config: Config): Tls {
  return cluster.tlsSecret ? { mode: 'files', ...cluster.tlsSecret.files } : config.tls;
}

/** Lets go of the Lease (its errors ignored when `quiet`: a failed start), the watches, the TLS and signing key Secrets and sharing. */
export async function releaseCluster(cluster: Cluster, sharing: AgentSharing, quiet: boolean, signing: { stop(): void }): Promise<void> {
  signing.stop();
  const lease = cluster.elector.stop();
  await (quiet ? lease?.catch(() => undefined) : lease);
  await cluster.source.stop();
  cluster.tlsSecret?.stop();
  await sharing.stop();
}
