// Kubernetes mode, wired top to bottom: config → the base (logger, metrics, store, work queue, fleet)
// → the cluster's parts (TLS Secret, source, Lease) → the controller (bundles packed in a thread) →
// agent sharing → the ops listener → the first list, the election, the first build → the API
// listener → the console → serving; then the graceful stop. Every replica lists, reconciles and
// serves from its own cache; only the leader writes token Secrets and status, and followers serve
// the bundle revisions it recorded.
import { lintWarnings, type WarningsFor } from '../admission/index.ts';
import { createPackingThread, createThreadPacker } from '../bundle/index.ts';
import { kubePublicUrl, type Config } from '../config.ts';
import { countingWriter, createController, type Controller, type SigningHolder } from '../controller/index.ts';
import { adminKeyHashes, createObjectPatcher, type AgentSharing, type KubeSource, type LeaderElector } from '../kube/index.ts';
import type { Listening, Serving } from '../server/index.ts';
import {
  clusterAdmission,
  clusterTls,
  createSharing,
  isLeading,
  openCluster,
  releaseCluster,
  startResync,
  type Cluster,
  type ClusterOptions,
} from './cluster.ts';
import { consoleOpa, startConsole } from './console.ts';
import { createKubeSigning, type KubeSigning } from './kube-signing.ts';
import { controllerBase, createBase, startBaseHttp, type Base, type CommonOptions, type Running } from './core.ts';
import { closeRemaining, gracefulStop, startActivityFlush } from './lifecycle.ts';

export interface Operator extends Running {
  readonly identity: string;
  /** The console's URL (undefined: --console-listen is off). */
  readonly consoleUrl: string | undefined;
  readonly source: KubeSource;
  readonly elector: LeaderElector;
  /** The keys bundles are signed with, as the signing key Secret holds them. */
  readonly signing: SigningHolder;
  /** Sync activity → Bundle status lastSync now (the leader writes it), then waits for the queue. */
  flushActivity(): Promise<void>;
}

export interface OperatorOptions extends CommonOptions, ClusterOptions {
  /** How often sync activity reaches Bundle status (default 30 s: one status write per bundle at most). */
  readonly activityFlushMs?: number;
  /** The admission webhook's warnings for an object it admits (default: its lint findings). */
  readonly admissionWarnings?: WarningsFor;
}

/** Starts Kubernetes mode: lists, builds, then listens; a failed start closes what it opened and throws. */
export async function startOperator(config: Config, options: OperatorOptions = {}): Promise<Operator> {
  // Checked before anything opens: a wrong --opa is the person's to fix, not a half-started operator.
  const opa = await consoleOpa(config);
  const base = createBase(
    config,
    options,
    'the first list of Rules, Connectors, Bundles, Directories and Secrets has not been processed yet',
  );
  const cluster = await openCluster(base, options);
  // Hashing and packing bundles run in a background thread: the event loop answering decisions and
  // bundle polls never holds a large bundle's gzip.
  const packingThread = createPackingThread();
  const signing = createKubeSigning(base, cluster, options);
  const controller = createController({
    ...controllerBase(base, options),
    signing: signing.holder,
    objects: cluster.source,
    writer: countingWriter(cluster.source.writer, base.changes.note),
    leading: () => isLeading(cluster),
    packer: createThreadPacker(packingThread),
    held: true,
  });
  const sharing = createSharing(cluster, base, options);
  const serving = await startBaseHttp(
    base,
    kubePublicUrl(config.kube.serviceName, cluster.namespace, config.listen.port),
    clusterAdmission(cluster, options.admissionWarnings ?? lintWarnings),
  );
  const remaining = { fleet: base.fleet, closeThreads: () => packingThread.close(), http: serving };
  const release = (quiet: boolean) => () => releaseCluster(cluster, sharing, quiet, signing);
  let api: Listening;
  try {
    api = await listenOnceBuilt(base, cluster, controller, sharing, serving, signing);
  } catch (err) {
    await closeRemaining({ ...remaining, release: release(true) });
    throw err;
  }
  const resync = startResync(cluster, base, signing);
  const activity = startActivityFlush({
    store: base.store,
    controller,
    log: base.log,
    failure: 'Failed to record sync activity',
    everyMs: options.activityFlushMs ?? 30_000,
  });
  let console: Awaited<ReturnType<typeof startConsole>>;
  try {
    console = await startConsole(
      base,
      {
        mode: 'kubernetes',
        objects: cluster.source,
        editor: createObjectPatcher(cluster.clients, base.log.child({ module: 'console' })),
        readTokenSecret: (ns, name) => cluster.source.writer.readTokenSecret(ns, name),
        adminKeyHashes: () => adminKeyHashes(cluster.clients, cluster.namespace),
      },
      opa,
    );
  } catch (err) {
    clearInterval(resync);
    await serving.closeApi();
    await closeRemaining({ ...remaining, release: release(true) });
    throw err;
  }
  base.readiness.serving();
  base.log.info({ url: api.url, leader: isLeading(cluster), tenants: [...base.store.snapshot().tenants.keys()].length }, 'Serving');

  const stop = gracefulStop({
    ...remaining,
    base,
    quiesce: () => clearInterval(resync),
    closeConsole: console.close,
    activity,
    controller,
    // Released after the final status writes, so the next leader starts from them.
    release: release(false),
  });
  return {
    apiUrl: api.url,
    opsUrl: serving.ops.url,
    caFile: api.caFile,
    identity: cluster.identity,
    consoleUrl: console.url,
    store: base.store,
    source: cluster.source,
    controller,
    elector: cluster.elector,
    signing: signing.holder,
    metrics: base.metrics,
    fleet: base.fleet,
    shadow: base.shadow,
    flushActivity: activity.flush,
    stop,
  };
}

/** Lists every kind, takes part in the election, waits for the first build to be published, then opens the API. */
async function listenOnceBuilt(
  base: Base,
  cluster: Cluster,
  controller: Controller,
  sharing: AgentSharing,
  serving: Serving,
  signing: KubeSigning,
): Promise<Listening> {
  await sharing.start();
  await cluster.source.start();
  base.log.info({ objects: cluster.source.keys().length }, 'Listed every watched kind');
  await cluster.elector.start();
  // The keys before the first pass (a leader creates the Secret), so the first build is signed.
  await signing.keySecret?.check();
  signing.start();
  // Every object is queued, and a leader's first pass collapsed into it: one reconcile each.
  controller.release();
  // Ready once the first pass is built and published; a first start's thousands of status writes
  // go on in the background (measured: 100 s for 10,200 of them one by one).
  await controller.settled();
  const api = await serving.listenApi(clusterTls(cluster, base.config));
  signing.listening();
  return api;
}
