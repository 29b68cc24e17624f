// Wiring and lifecycle only: config → logger → store → source → controller → HTTP → shutdown.
import { watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { DEFAULT_FOLDER, type Config } from '../config.ts';
import { createController, type Controller } from '../controller/index.ts';
import { agentsReport, type Destination } from '../fleet/index.ts';
import { startFleet, type Fleet } from './fleet.ts';
import type { LongPolls } from '../http/index.ts';
import { createLogger } from '../log.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import { startServing } from './http.ts';
import {
  createFolderSource,
  createOpaConfigWriter,
  createThreadReader,
  openStateFolder,
  type FolderSource,
  type StateFolder,
} from '../standalone/index.ts';
import { createThreadPacker } from '../work/packer.ts';
import { createWorkerThread } from '../work/pool.ts';
import { bundleKey, createStore, type Store } from '../store/index.ts';

export interface Service {
  readonly apiUrl: string;
  readonly opsUrl: string;
  /** The certificate clients should trust, when the API speaks TLS. */
  readonly caFile: string | undefined;
  readonly store: Store;
  readonly state: StateFolder;
  readonly source: FolderSource;
  readonly controller: Controller;
  readonly longPolls: LongPolls;
  readonly metrics: Metrics;
  /** What the OPA agents report, their recent decisions, and the decision log. */
  readonly fleet: Fleet;
  /** Writes sync activity, agents and recent decisions to the state folder and refreshes bundle status now. */
  flushActivity(): Promise<void>;
  /** Graceful stop: no new connections, held long polls answered, in-flight requests finished. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  readonly log?: Logger;
  readonly now?: () => Date;
  readonly random?: (size: number) => Uint8Array;
  /** How often sync activity is written out (default 5 s). */
  readonly activityFlushMs?: number;
  /** Folder re-read delay after a change (default 100 ms). */
  readonly debounceMs?: number;
  /** How long an object must stay missing from the folder before it is deleted (default 1 s). */
  readonly confirmDeleteMs?: number;
  /** Files changed this recently are always parsed again (default 2 s; tests set 0). */
  readonly racyWindowMs?: number;
  /** Overrides --settle-ms (tests set 0, or drive it with `now`). */
  readonly settleMs?: number;
  /** Shortest time between two agent-driven status refreshes of one Bundle (default 5 s). */
  readonly agentStatusIntervalMs?: number;
  /** Stdout as the log writes it, for --decision-log stdout (lines never interleave). */
  readonly stdout?: Destination;
}

/** Calls `changed` (debounced) when anything under the folders changes; the folders are created first. */
async function watchFolders(dirs: readonly string[], changed: () => void, log: Logger): Promise<{ close(): void }> {
  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      changed();
    }, 50);
    timer.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of dirs) {
    await mkdir(dir, { recursive: true });
    const w = watch(dir, { recursive: true }, schedule);
    w.on('error', (err) => log.warn({ err, dir }, 'Stopped watching the token files (they are still checked every flush)'));
    watchers.push(w);
  }
  return {
    close() {
      for (const w of watchers) w.close();
      if (timer) clearTimeout(timer);
    },
  };
}

/** Starts standalone mode: reads the manifests, builds everything, then listens. */
export async function startService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  if (config.manifests === undefined)
    throw new Error('startService is standalone mode and needs config.manifests; Kubernetes mode is startOperator');
  const log = options.log ?? createLogger(config.logLevel);
  const now = options.now ?? (() => new Date());
  const metrics = createMetrics();
  const store = createStore();
  const state = openStateFolder(config.stateDir);
  let ready = false;
  let controller: Controller | undefined;
  const folder = config.folder ?? DEFAULT_FOLDER;
  // Reading and parsing manifests, and hashing and packing bundles, run in two background threads:
  // the event loop that answers decisions and bundle polls never holds a large file or a gzip.
  const readingThread = createWorkerThread('acl-manifests');
  const packingThread = createWorkerThread('acl-bundles');
  const source = createFolderSource({
    dir: config.manifests,
    state,
    log: log.child({ module: 'standalone' }),
    enqueue: (key) => controller?.enqueue(key),
    reader: createThreadReader(readingThread, { maxBytes: folder.maxManifestBytes, maxDocuments: folder.maxManifestDocuments }),
    settleMs: options.settleMs ?? folder.settleMs,
    clock: () => now().getTime(),
    ...(options.debounceMs !== undefined ? { debounceMs: options.debounceMs } : {}),
    ...(options.confirmDeleteMs !== undefined ? { confirmDeleteMs: options.confirmDeleteMs } : {}),
    ...(options.racyWindowMs !== undefined ? { racyWindowMs: options.racyWindowMs } : {}),
  });
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
  controller = createController({
    objects: source,
    writer: source.writer,
    store,
    log: log.child({ module: 'controller' }),
    now,
    metrics: metrics.controller,
    agents: fleet.view,
    packer: createThreadPacker(packingThread),
    ...(options.random ? { random: options.random } : {}),
  });
  const serving = await startServing({
    config,
    store,
    metrics,
    log,
    now,
    fleet,
    notReady: () => (ready ? undefined : 'the manifests folder has not been read and built yet'),
  });

  for (const a of await state.activity().catch(() => [])) store.activity.restore(bundleKey(a.namespace, a.bundle), a.records);
  const unreadable = (file: string, message: string): void => {
    log.warn({ file, error: message }, 'Skipped an unreadable recent-decisions file');
  };
  for (const d of await state.decisions(unreadable).catch((err: unknown) => {
    log.warn({ err }, 'Could not read the recent decisions');
    return [];
  })) {
    fleet.recent.restore(bundleKey(d.namespace, d.bundle), d.decisions);
  }
  await state.clearAgents();
  await source.start();
  await controller.idle();
  source.watch();

  /** Bundles whose agents file holds agents: rewritten (or removed) at every flush. */
  const withAgents = new Set<string>();
  const flushActivity = async (): Promise<void> => {
    for (const key of store.activity.takeChanged()) {
      const [tenant, bundle] = key.split('/') as [string, string];
      await state.writeActivity(tenant, bundle, store.activity.list(key));
      controller?.enqueue({ kind: 'Bundle', namespace: tenant, name: bundle });
    }
    for (const key of fleet.recent.takeChanged()) {
      const [tenant, bundle] = key.split('/') as [string, string];
      await state.writeDecisions(tenant, bundle, fleet.recent.list(key));
    }
    // Agents' report times move with every report: their files are written on this cadence, not per report.
    const snapshot = store.snapshot();
    const nowMs = now().getTime();
    const seen = new Set<string>();
    for (const t of snapshot.tenants.values()) {
      for (const b of t.bundles.values()) {
        const report = agentsReport(
          fleet.agents,
          { tenant: t.tenant, connector: b.connector, bundle: b.name, revision: b.built.revision },
          nowMs,
        );
        const key = bundleKey(t.tenant, b.name);
        if (report.list.length === 0 && !withAgents.has(key)) continue;
        seen.add(key);
        await state.writeAgents(t.tenant, b.name, report.list.length === 0 ? undefined : { ...report });
        if (report.list.length === 0) withAgents.delete(key);
        else withAgents.add(key);
      }
    }
    for (const key of [...withAgents].filter((k) => !seen.has(k))) {
      const [tenant, bundle] = key.split('/') as [string, string];
      await state.writeAgents(tenant, bundle, undefined);
      withAgents.delete(key);
    }
    await controller?.idle();
  };
  // A token file (OPA's token_path) or token Secret deleted while running is written again from
  // memory at once, and checked again at every flush in case a watch event was missed.
  const repairTokens = (): void => {
    state.repairTokens().then(
      (files) => {
        for (const file of files) log.warn({ file }, 'Rewrote a token file that was deleted or changed');
      },
      (err: unknown) => log.error({ err }, 'Failed to rewrite token files'),
    );
  };
  const tokenWatch = await watchFolders([join(config.stateDir, 'tokens'), join(config.stateDir, 'secrets')], repairTokens, log);
  const flushTimer = setInterval(() => {
    flushActivity().catch((err: unknown) => log.error({ err }, 'Failed to write sync activity'));
    repairTokens();
  }, options.activityFlushMs ?? 5000);
  flushTimer.unref();

  const api = await serving.listenApi(config.tls);
  // One OPA configuration per bundle in <state-dir>/opa/, rewritten as bundles come and go.
  const opaConfigs = createOpaConfigWriter({ stateDir: config.stateDir, url: api.url, caFile: api.caFile, tokenFile: state.tokenFile });
  const syncOpaConfigs = (): void => {
    opaConfigs.sync(store.snapshot()).catch((err: unknown) => log.error({ err }, 'Failed to write the OPA configurations'));
  };
  await opaConfigs.sync(store.snapshot());
  const unsubscribeOpa = store.onBundleChange(syncOpaConfigs);
  ready = true;
  const snapshot = store.snapshot();
  log.info({ url: api.url, tenants: [...snapshot.tenants.keys()], problems: source.problems().length }, 'Serving');

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      ready = false;
      source.stop();
      tokenWatch.close();
      unsubscribeOpa();
      clearInterval(flushTimer);
      await serving.closeApi();
      await flushActivity().catch((err: unknown) => log.error({ err }, 'Failed to write sync activity'));
      controller?.stop();
      await controller?.idle();
      await fleet.stop();
      await Promise.all([readingThread.close(), packingThread.close()]);
      await serving.closeOps();
      log.info('Stopped');
    })();
    return stopping;
  };

  return {
    apiUrl: api.url,
    opsUrl: serving.ops.url,
    caFile: api.caFile,
    store,
    state,
    source,
    controller,
    longPolls: serving.longPolls,
    metrics,
    fleet,
    flushActivity,
    stop,
  };
}
