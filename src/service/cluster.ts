// Kubernetes mode's own parts, as top-level functions over one explicit state object: who this
// replica is, the Kubernetes source with the API listener's TLS Secret, the Lease elector (a new
// leader writes every object once, then the CA, into token Secrets and the webhook's caBundle), agent
// sharing between replicas, and their release.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { JudgedKind, WarningsFor } from '../admission/index.ts';
import type { Config, Tls } from '../config.ts';
import type { Controller } from '../controller/index.ts';
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
import type { Core } from './core.ts';
import type { Fleet } from './fleet.ts';

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
}

export interface Cluster {
  readonly clients: KubeClients;
  readonly namespace: string;
  readonly identity: string;
  readonly source: KubeSource;
  /** Set while opening, before anything starts (the source reads its CA for token Secrets). */
  tlsSecret: TlsSecret | undefined;
  /** Set once created (after the controller, which asks whether this replica leads). */
  elector: LeaderElector | undefined;
  /** The webhook's caBundle upkeep, with --webhook-config and --tls-secret. */
  webhookCa: WebhookCa | undefined;
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
export function isLeading(cluster: Cluster): boolean {
  return cluster.elector?.isLeader() ?? false;
}

/** Says who this replica is, creates the Kubernetes source and reads (or creates) the TLS Secret. */
export async function openCluster(core: Core, options: ClusterOptions): Promise<Cluster> {
  const { config, log, metrics } = core;
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
  const cluster: Cluster = {
    clients,
    namespace,
    identity,
    tlsSecret: undefined,
    elector: undefined,
    webhookCa: undefined,
    source: createKubeSource({
      clients,
      namespaces: config.kube.namespaces,
      log: log.child({ module: 'kube' }),
      identity,
      now: () => core.now().getTime(),
      enqueue: core.enqueue,
      onWatchRestart: (feed) => metrics.watchRestarts.inc({ feed }),
      onList: (feed) => metrics.watchLists.inc({ feed }),
      caBundle: () => cluster.tlsSecret?.ca(),
      ...(options.watchRestartMs !== undefined ? { restartMs: options.watchRestartMs } : {}),
      ...(options.watchMaxRestartMs !== undefined ? { maxRestartMs: options.watchMaxRestartMs } : {}),
    }),
  };
  if (config.tls.mode === 'secret') {
    cluster.tlsSecret = await openTlsSecret({
      core: clients.core,
      namespace,
      name: config.tls.name,
      serviceName: config.kube.serviceName,
      dir: join(config.stateDir, 'tls-secret'),
      log,
      now: () => core.now().getTime(),
      ...(options.tlsRefreshMs !== undefined ? { refreshMs: options.tlsRefreshMs } : {}),
      onCaChange: () => {
        if (!isLeading(cluster)) return;
        cluster.source.syncCa().catch((err: unknown) => log.error({ err }, 'Failed to write the new CA into token Secrets'));
        void cluster.webhookCa?.sync();
      },
    });
    const name = config.kube.webhookConfiguration;
    const secret = cluster.tlsSecret;
    if (name !== undefined)
      cluster.webhookCa = createWebhookCa({ api: webhookApi(clients), name, ca: () => secret.ca(), log: log.child({ module: 'webhook' }) });
  }
  return cluster;
}

/** The leader writes the serving CA into the webhook's caBundle where it differs (also repairing a hand edit). */
export function keepWebhookCa(cluster: Cluster): void {
  if (isLeading(cluster)) void cluster.webhookCa?.sync();
}

/** Enqueues every object the source holds (the periodic resync, and a new leader's first pass). */
export function resyncAll(cluster: Cluster, controller: Controller): void {
  for (const key of cluster.source.keys()) controller.enqueue(key);
}

/** The Lease elector; a new leader writes whatever its predecessor left undone: every object once, then the CA. */
export function createElection(cluster: Cluster, core: Core, controller: Controller, options: ClusterOptions): LeaderElector {
  const { log, metrics } = core;
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
      resyncAll(cluster, controller);
      cluster.source.syncCa().catch((err: unknown) => log.error({ err }, 'Failed to write the CA into token Secrets'));
      void cluster.webhookCa?.sync();
    },
  });
}

/** Every replica hears some of the OPAs: they share what they hear, so RolledOut counts them all. */
export function createSharing(cluster: Cluster, core: Core, fleet: Fleet, options: ClusterOptions): AgentSharing {
  const { name: podName, uid: podUid } = core.config.kube.pod;
  return createAgentSharing({
    clients: cluster.clients,
    namespace: cluster.namespace,
    identity: cluster.identity,
    registry: fleet.agents,
    log: core.log.child({ module: 'agents' }),
    now: () => core.now().getTime(),
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

/** Lets go of the Lease (its errors ignored when `quiet`: a failed start), the watches, the TLS Secret and sharing. */
export async function releaseCluster(cluster: Cluster, sharing: AgentSharing, quiet: boolean): Promise<void> {
  const lease = cluster.elector?.stop();
  await (quiet ? lease?.catch(() => undefined) : lease);
  await cluster.source.stop();
  cluster.tlsSecret?.stop();
  await sharing.stop();
}
