// Kubernetes mode, wiring and lifecycle only: informers → controller → store → HTTP, with a Lease
// deciding which replica writes. Every replica lists, reconciles and serves from its own cache; only
// the leader writes token Secrets and status, and followers serve the bundle revisions it recorded.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { kubePublicUrl, type Config, type Tls } from '../config.ts';
import { createController, type Controller } from '../controller/index.ts';
import { createThreadPacker } from '../work/packer.ts';
import { createWorkerThread } from '../work/pool.ts';
import type { Destination } from '../fleet/index.ts';
import { startFleet, type Fleet } from './fleet.ts';
import { createAgentSharing, type AgentSharing } from '../kube/agents.ts';
import { createClients, type KubeClients } from '../kube/client.ts';
import { createLeaderElector, type LeaderElector } from '../kube/leader.ts';
import { createKubeSource, type KubeSource } from '../kube/source.ts';
import { openTlsSecret, type TlsSecret } from '../kube/tls.ts';
import { createLogger } from '../log.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import { startServing } from './http.ts';
import { createStore, type Store } from '../store/index.ts';

export interface Operator {
  readonly apiUrl: string;
  readonly opsUrl: string;
  /** The CA clients should trust, when the API speaks TLS. */
  readonly caFile: string | undefined;
  readonly identity: string;
  readonly store: Store;
  readonly source: KubeSource;
  readonly controller: Controller;
  readonly elector: LeaderElector;
  readonly metrics: Metrics;
  /** What the OPA agents report, their recent decisions, and the decision log. */
  readonly fleet: Fleet;
  /** Sync activity → Bundle status lastSync now (the leader writes it), then waits for the queue. */
  flushActivity(): Promise<void>;
  stop(): Promise<void>;
}

export interface OperatorOptions {
  readonly log?: Logger;
  readonly now?: () => Date;
  readonly random?: (size: number) => Uint8Array;
  readonly clients?: KubeClients;
  /** Lease timings (tests shorten them). */
  readonly leaseSeconds?: number;
  readonly renewMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryMs?: number;
  /** How often sync activity reaches Bundle status (default 30 s: one status write per bundle at most). */
  readonly activityFlushMs?: number;
  /** First delay before a failed watch is restarted (default 1 s). */
  readonly watchRestartMs?: number;
  readonly watchMaxRestartMs?: number;
  /** Shortest time between two agent-driven status refreshes of one Bundle (default 5 s). */
  readonly agentStatusIntervalMs?: number;
  /** Shortest time between two publications of this replica's agents to its ConfigMap (default 2 s). */
  readonly agentPublishIntervalMs?: number;
  /** How often that ConfigMap is rewritten while it holds agents (default 30 s, at most a third of the expiry). */
  readonly agentHeartbeatMs?: number;
  /** Stdout as the log writes it, for --decision-log stdout (lines never interleave). */
  readonly stdout?: Destination;
}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** --operator-namespace, then POD_NAMESPACE, then the service account's namespace, then acl-system. */
function publicUrlOption(url: string | undefined): { defaultPublicUrl?: string } {
  return url === undefined ? {} : { defaultPublicUrl: url };
}

function operatorNamespace(config: Config): string {
  if (config.kube.operatorNamespace) return config.kube.operatorNamespace;
  if (process.env['POD_NAMESPACE']) return process.env['POD_NAMESPACE'];
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || 'acl-system';
  } catch {
    return 'acl-system';
  }
}

export async function startOperator(config: Config, options: OperatorOptions = {}): Promise<Operator> {
  const log = options.log ?? createLogger(config.logLevel);
  const now = options.now ?? (() => new Date());
  const clients = options.clients ?? createClients(config.kube.kubeconfig);
  const namespace = operatorNamespace(config);
  const identity = config.kube.identity ?? process.env['POD_NAME'] ?? `${hostname()}-${process.pid}`;
  const metrics = createMetrics();
  const store = createStore();
  let ready = false;
  let controller: Controller | undefined;
  let elector: LeaderElector | undefined;
  const leading = (): boolean => elector?.isLeader() ?? false;
  log.info(
    {
      server: clients.config.getCurrentCluster()?.server,
      namespaces: config.kube.namespaces ?? 'all',
      operatorNamespace: namespace,
      identity,
    },
    'Starting the Kubernetes operator',
  );

  let tlsSecret: TlsSecret | undefined;
  const kubeSource = createKubeSource({
    clients,
    namespaces: config.kube.namespaces,
    log: log.child({ module: 'kube' }),
    identity,
    enqueue: (key) => controller?.enqueue(key),
    onWatchRestart: (feed) => metrics.watchRestarts.inc({ feed }),
    onList: (feed) => metrics.watchLists.inc({ feed }),
    caBundle: () => tlsSecret?.ca(),
    ...(options.watchRestartMs !== undefined ? { restartMs: options.watchRestartMs } : {}),
    ...(options.watchMaxRestartMs !== undefined ? { maxRestartMs: options.watchMaxRestartMs } : {}),
  });
  if (config.tls.mode === 'secret') {
    tlsSecret = await openTlsSecret({
      core: clients.core,
      namespace,
      name: config.tls.name,
      serviceName: config.kube.serviceName,
      dir: join(config.stateDir, 'tls-secret'),
      log,
      onCaChange: () => {
        if (leading()) kubeSource.syncCa().catch((err: unknown) => log.error({ err }, 'Failed to write the new CA into token Secrets'));
      },
    });
  }
  const fleet = startFleet({
    config,
    store,
    metrics,
    log: log.child({ module: 'fleet' }),
    now: () => now().getTime(),
    enqueue: (key) => controller?.enqueue(key),
    ...(options.agentStatusIntervalMs !== undefined ? { statusIntervalMs: options.agentStatusIntervalMs } : {}),
    ...(options.stdout ? { stdout: options.stdout } : {}),
  });
  // Hashing and packing bundles run in a background thread: the event loop answering decisions and
  // bundle polls never holds a large bundle's gzip.
  const packingThread = createWorkerThread('acl-bundles');
  controller = createController({
    objects: kubeSource,
    writer: kubeSource.writer,
    store,
    log: log.child({ module: 'controller' }),
    now,
    metrics: metrics.controller,
    leading,
    agents: fleet.view,
    packer: createThreadPacker(packingThread),
    ...(options.random ? { random: options.random } : {}),
  });
  const ctl = controller;
  const resyncAll = (): void => {
    for (const key of kubeSource.keys()) ctl.enqueue(key);
  };
  elector = createLeaderElector({
    api: clients.coordination,
    namespace,
    name: 'acl-operator',
    identity,
    log: log.child({ module: 'leader' }),
    ...(options.leaseSeconds !== undefined ? { leaseSeconds: options.leaseSeconds } : {}),
    ...(options.renewMs !== undefined ? { renewMs: options.renewMs } : {}),
    ...(options.renewDeadlineMs !== undefined ? { renewDeadlineMs: options.renewDeadlineMs } : {}),
    ...(options.retryMs !== undefined ? { retryMs: options.retryMs } : {}),
    onChange: (isLeader) => {
      metrics.leader.set(isLeader ? 1 : 0);
      if (!isLeader) return;
      // A new leader writes whatever its predecessor left undone: every object once, then the CA.
      resyncAll();
      kubeSource.syncCa().catch((err: unknown) => log.error({ err }, 'Failed to write the CA into token Secrets'));
    },
  });

  // Every replica hears some of the OPAs: they share what they hear, so RolledOut counts them all.
  const podName = process.env['POD_NAME'];
  const podUid = process.env['POD_UID'];
  const sharing: AgentSharing = createAgentSharing({
    clients,
    namespace,
    identity,
    registry: fleet.agents,
    log: log.child({ module: 'agents' }),
    now: () => now().getTime(),
    leading,
    ...(podName && podUid && podName === identity ? { pod: { name: podName, uid: podUid } } : {}),
    ...(options.agentPublishIntervalMs !== undefined ? { publishIntervalMs: options.agentPublishIntervalMs } : {}),
    ...(options.agentHeartbeatMs !== undefined ? { heartbeatMs: options.agentHeartbeatMs } : {}),
  });
  const serving = await startServing({
    config,
    store,
    metrics,
    log,
    now,
    fleet,
    notReady: () =>
      ready ? undefined : 'the first list of Rules, Connectors, Bundles, Directories and Secrets has not been processed yet',
    ...publicUrlOption(kubePublicUrl(config.kube.serviceName, namespace, config.listen.port)),
  });
  let api: Awaited<ReturnType<typeof serving.listenApi>> | undefined;
  try {
    await sharing.start();
    await kubeSource.start();
    log.info({ objects: kubeSource.keys().length }, 'Listed every watched kind');
    await elector.start();
    // Ready once the first pass is built and published; a first start's thousands of status writes
    // go on in the background (measured: 100 s for 10,200 of them one by one).
    await controller.settled();
    const tls: Tls = tlsSecret ? { mode: 'files', ...tlsSecret.files } : config.tls;
    api = await serving.listenApi(tls);
  } catch (err) {
    await elector.stop().catch(() => undefined);
    await kubeSource.stop();
    tlsSecret?.stop();
    await sharing.stop();
    await fleet.stop();
    await packingThread.close();
    await serving.closeOps();
    throw err;
  }

  const resync = setInterval(resyncAll, config.kube.resyncSeconds * 1000);
  resync.unref();
  const flushActivity = async (): Promise<void> => {
    for (const key of store.activity.takeChanged()) {
      const [tenant, bundle] = key.split('/') as [string, string];
      ctl.enqueue({ kind: 'Bundle', namespace: tenant, name: bundle });
    }
    await ctl.idle();
  };
  const flushTimer = setInterval(() => {
    flushActivity().catch((err: unknown) => log.error({ err }, 'Failed to record sync activity'));
  }, options.activityFlushMs ?? 30_000);
  flushTimer.unref();
  ready = true;
  log.info({ url: api.url, leader: leading(), tenants: [...store.snapshot().tenants.keys()].length }, 'Serving');

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      ready = false;
      clearInterval(resync);
      clearInterval(flushTimer);
      await serving.closeApi();
      await flushActivity().catch((err: unknown) => log.error({ err }, 'Failed to record sync activity'));
      ctl.stop();
      await ctl.idle();
      // Released last, after the final status writes, so the next leader starts from them.
      await elector?.stop();
      await kubeSource.stop();
      tlsSecret?.stop();
      await sharing.stop();
      await fleet.stop();
      await packingThread.close();
      await serving.closeOps();
      log.info('Stopped');
    })();
    return stopping;
  };

  return {
    apiUrl: api.url,
    opsUrl: serving.ops.url,
    caFile: api.caFile,
    identity,
    store,
    source: kubeSource,
    controller,
    elector,
    metrics,
    fleet,
    flushActivity,
    stop,
  };
}
