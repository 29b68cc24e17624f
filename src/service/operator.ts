// Kubernetes mode, wiring and lifecycle only: informers → controller → store → HTTP, with a Lease
// deciding which replica writes. Every replica lists, reconciles and serves from its own cache; only
// the leader writes token Secrets and status, and followers serve the bundle revisions it recorded.
import { lintWarnings, type WarningsFor } from '../admission/index.ts';
import { kubePublicUrl, type Config } from '../config.ts';
import { createController, type Controller } from '../controller/index.ts';
import type { AgentSharing, KubeSource, LeaderElector } from '../kube/index.ts';
import { createThreadPacker } from '../work/packer.ts';
import { createWorkerThread } from '../work/pool.ts';
import {
  clusterAdmission,
  clusterTls,
  createElection,
  createSharing,
  isLeading,
  keepWebhookCa,
  openCluster,
  releaseCluster,
  resyncAll,
  type Cluster,
  type ClusterOptions,
} from './cluster.ts';
import { controllerBase, createCore, startCoreFleet, startCoreHttp, type CommonOptions, type Core, type Running } from './core.ts';
import type { Listening } from './listeners.ts';
import type { Serving } from './http.ts';
import { closeRemaining, gracefulStop, startActivityFlush } from './lifecycle.ts';
import { consoleOpa, countingWriter, startConsole } from './console.ts';
import { adminKeyHashes, createObjectPatcher } from '../kube/index.ts';

export interface Operator extends Running {
  readonly identity: string;
  /** The console's URL (undefined: --console-listen is off). */
  readonly consoleUrl: string | undefined;
  readonly source: KubeSource;
  readonly elector: LeaderElector;
  /** Sync activity → Bundle status lastSync now (the leader writes it), then waits for the queue. */
  flushActivity(): Promise<void>;
}

export interface OperatorOptions extends CommonOptions, ClusterOptions {
  /** How often sync activity reaches Bundle status (default 30 s: one status write per bundle at most). */
  readonly activityFlushMs?: number;
  /** The admission webhook's warnings for an object it admits (default: its lint findings). */
  readonly admissionWarnings?: WarningsFor;
}

/** Lists every kind, takes part in the election, waits for the first build to be published, then opens the API. */
async function listenOnceBuilt(
  core: Core,
  cluster: Cluster,
  controller: Controller,
  sharing: AgentSharing,
  serving: Serving,
): Promise<Listening> {
  await sharing.start();
  await cluster.source.start();
  core.log.info({ objects: cluster.source.keys().length }, 'Listed every watched kind');
  await cluster.elector?.start();
  // Ready once the first pass is built and published; a first start's thousands of status writes
  // go on in the background (measured: 100 s for 10,200 of them one by one).
  await controller.settled();
  return serving.listenApi(clusterTls(cluster, core.config));
}

/** Starts Kubernetes mode: lists, builds, then listens; a failed start closes what it opened and throws. */
export async function startOperator(config: Config, options: OperatorOptions = {}): Promise<Operator> {
  // Checked before anything opens: a wrong --opa is the person's to fix, not a half-started operator.
  const opa = await consoleOpa(config);
  const core = createCore(config, options);
  const cluster = await openCluster(core, options);
  const fleet = startCoreFleet(core, options);
  // Hashing and packing bundles run in a background thread: the event loop answering decisions and
  // bundle polls never holds a large bundle's gzip.
  const packingThread = createWorkerThread('acl-bundles');
  const controller = createController({
    ...controllerBase(core, fleet, options),
    objects: cluster.source,
    writer: countingWriter(cluster.source.writer, (tenant) => core.changes.note(tenant)),
    leading: () => isLeading(cluster),
    packer: createThreadPacker(packingThread),
  });
  core.controller = controller;
  const elector = createElection(cluster, core, controller, options);
  cluster.elector = elector;
  const sharing = createSharing(cluster, core, fleet, options);
  const serving = await startCoreHttp(
    core,
    fleet,
    'the first list of Rules, Connectors, Bundles, Directories and Secrets has not been processed yet',
    kubePublicUrl(config.kube.serviceName, cluster.namespace, config.listen.port),
    clusterAdmission(cluster, options.admissionWarnings ?? lintWarnings),
  );
  const remaining = { fleet, closeThreads: () => packingThread.close(), http: serving };
  let api: Listening;
  try {
    api = await listenOnceBuilt(core, cluster, controller, sharing, serving);
  } catch (err) {
    await closeRemaining({ ...remaining, release: () => releaseCluster(cluster, sharing, true) });
    throw err;
  }

  const resync = setInterval(() => {
    resyncAll(cluster, controller);
    keepWebhookCa(cluster);
  }, config.kube.resyncSeconds * 1000);
  resync.unref();
  const activity = startActivityFlush({
    store: core.store,
    controller,
    log: core.log,
    failure: 'Failed to record sync activity',
    everyMs: options.activityFlushMs ?? 30_000,
  });
  let console: Awaited<ReturnType<typeof startConsole>>;
  try {
    console = await startConsole(
      core,
      fleet,
      {
        mode: 'kubernetes',
        objects: cluster.source,
        editor: createObjectPatcher(cluster.clients, core.log.child({ module: 'console' })),
        readTokenSecret: (ns, name) => cluster.source.writer.readTokenSecret(ns, name),
        adminKeyHashes: () => adminKeyHashes(cluster.clients, cluster.namespace),
      },
      core.changes,
      opa,
    );
  } catch (err) {
    clearInterval(resync);
    await serving.closeApi();
    await closeRemaining({ ...remaining, release: () => releaseCluster(cluster, sharing, true) });
    throw err;
  }
  core.ready = true;
  core.log.info({ url: api.url, leader: isLeading(cluster), tenants: [...core.store.snapshot().tenants.keys()].length }, 'Serving');

  const stop = gracefulStop({
    ...remaining,
    core,
    quiesce: () => clearInterval(resync),
    closeConsole: console.close,
    activity,
    controller,
    // Released after the final status writes, so the next leader starts from them.
    release: () => releaseCluster(cluster, sharing, false),
  });
  return {
    apiUrl: api.url,
    opsUrl: serving.ops.url,
    caFile: api.caFile,
    identity: cluster.identity,
    consoleUrl: console.url,
    store: core.store,
    source: cluster.source,
    controller,
    elector,
    metrics: core.metrics,
    fleet,
    flushActivity: activity.flush,
    stop,
  };
}
