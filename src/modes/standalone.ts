// Standalone mode, wired top to bottom: config → the base (logger, metrics, store, work queue, fleet)
// → the folder pipeline (source → controller) → the ops listener → the state folder's leftovers →
// the signing keys → the first build → the API listener → the console → serving; then the graceful
// stop. A state folder on disk stands in for the API server.
import { DEFAULT_FOLDER, type Config } from '../config.ts';
import { createSigningHolder, type SigningHolder } from '../controller/index.ts';
import { retirementDue } from '../fleet/index.ts';
import type { LongPolls } from '../http/index.ts';
import type { Opa } from '../opa/index.ts';
import { createPipeline, type Pipeline } from '../pipeline/index.ts';
import { createManifestEditor, openStateFolder, type FolderSource, type StateFolder } from '../standalone/index.ts';
import { adminKeyHashesOf, consoleOpa, newAdminKey, startConsole } from './console.ts';
import { controllerBase, createBase, startBaseHttp, type Base, type CommonOptions, type Running } from './core.ts';
import { closeRemaining, gracefulStop, startActivityFlush } from './lifecycle.ts';
import { folderActivity, restoreActivity } from './persist.ts';
import { followKeyFolder, type KeyFolder } from './signing-keys.ts';
import { keepOpaConfigs, keepTokenFiles } from './state-files.ts';

export interface Service extends Running {
  readonly state: StateFolder;
  readonly source: FolderSource;
  readonly longPolls: LongPolls;
  /** The console's URL (undefined: --console-listen is off) and its admin key file. */
  readonly console: { readonly url: string | undefined; readonly adminKeyFile: string };
  /** Writes sync activity, agents and recent decisions to the state folder and refreshes bundle status now. */
  flushActivity(): Promise<void>;
  /** The keys bundles are signed with (unsigned with --unsigned-bundles). */
  readonly signing: SigningHolder;
  /** Reads the key files of signing/ now rather than at the next poll, and retires the previous key when due. */
  checkSigningKeys(): Promise<void>;
}

export interface ServiceOptions extends CommonOptions {
  /** How often sync activity is written out (default 5 s). */
  readonly activityFlushMs?: number;
  /** Folder re-read delay after a change (default 50 ms). */
  readonly debounceMs?: number;
  /** How long an object must stay missing from the folder before it is deleted (default 1 s). */
  readonly confirmDeleteMs?: number;
  /** Files changed this recently are always parsed again (default 2 s; tests set 0). */
  readonly racyWindowMs?: number;
  /** Overrides --settle-ms (tests set 0, or drive it with `now`). */
  readonly settleMs?: number;
  /** How a first signing key is made (default: a new RSA 3072 key; tests pass a cached one). */
  readonly newSigningKeyPem?: () => string;
  /** How often signing/ is looked at (default 2 s). */
  readonly signingPollMs?: number;
}

/** Starts standalone mode: reads the manifests, builds everything, then listens. A failed start closes what it opened and throws. */
export async function startService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const manifests = config.manifests;
  if (manifests === undefined)
    throw new Error('startService is standalone mode and needs config.manifests; Kubernetes mode is startOperator');
  // Checked before anything opens: a wrong --opa is the person's to fix, not a half-started service.
  const opa = await consoleOpa(config);
  const base = createBase(config, options, 'the manifests folder has not been read and built yet');
  const { log, fleet } = base;
  const state = openStateFolder(config.stateDir);
  const folder = config.folder ?? DEFAULT_FOLDER;
  // Filled from the state folder's key files before the first build (serve()).
  const signing = createSigningHolder(
    config.unsignedBundles ? { unsigned: true } : { unsigned: false, ring: undefined, problem: 'the signing keys were not read yet' },
  );
  const pipeline = createPipeline({
    dir: manifests,
    state,
    log,
    now: base.now,
    limits: { maxBytes: folder.maxManifestBytes, maxDocuments: folder.maxManifestDocuments },
    settleMs: options.settleMs ?? folder.settleMs,
    timings: {
      debounceMs: options.debounceMs,
      confirmDeleteMs: options.confirmDeleteMs,
      racyWindowMs: options.racyWindowMs,
      rescanMs: folder.rescanSeconds * 1000,
    },
    controller: { ...controllerBase(base, options), signing },
    onStatusWrite: base.changes.note,
  });
  // What a failed start must close, newest first.
  const opened: (() => Promise<void> | void)[] = [
    () => closeRemaining({ fleet, closeThreads: pipeline.closeThreads, http: { closeOps: async () => {} } }),
    () => pipeline.controller.stop(),
  ];
  try {
    return await serve({ manifests, options, base, pipeline, state, opa, signing }, opened);
  } catch (err) {
    for (const close of opened.reverse()) await Promise.resolve(close()).catch(() => undefined);
    throw err;
  }
}

interface Parts {
  readonly manifests: string;
  readonly options: ServiceOptions;
  readonly base: Base;
  readonly pipeline: Pipeline;
  readonly state: StateFolder;
  readonly opa: Opa | undefined;
  readonly signing: SigningHolder;
}

/**
 * The key files of signing/, read into the holder and followed (nothing with --unsigned-bundles).
 * The previous key is retired once the service has heard from its agents for a whole
 * --agent-expiry-seconds (an OPA it has not heard from yet may still verify with the previous key)
 * and every agent of every bundle reports the current key.
 */
async function signingKeys(parts: Parts): Promise<KeyFolder & { listening(): void }> {
  const { base, state, options, signing } = parts;
  if (signing.get().unsigned) return { check: async () => {}, close: () => {}, listening: () => {} };
  // Status reports are heard once the API listens (the agents files were cleared: a restarted service
  // has heard none); a slow first read of the folder before that is no part of the agent window.
  let listeningSinceMs: number | undefined;
  const folder = await followKeyFolder({
    stateDir: state.dir,
    holder: signing,
    log: base.log.child({ module: 'signing' }),
    ...(options.newSigningKeyPem ? { newKeyPem: options.newSigningKeyPem } : {}),
    ...(options.signingPollMs !== undefined ? { pollMs: options.signingPollMs } : {}),
    retirementDue(currentKid) {
      const bundles = [...base.store.snapshot().tenants.values()].flatMap((t) => [...t.bundles.values()]);
      return listeningSinceMs !== undefined && retirementDue(base.fleet.agents, bundles, currentKid, base.nowMs(), listeningSinceMs).due;
    },
  });
  return {
    ...folder,
    listening: () => {
      listeningSinceMs ??= base.nowMs();
    },
  };
}

/** Opens and starts everything in order, each pushed on `opened` so a failed start can close it. */
async function serve(parts: Parts, opened: (() => Promise<void> | void)[]): Promise<Service> {
  const { manifests, options, base, pipeline, state, opa } = parts;
  const { log, store, fleet, config } = base;
  const { source, controller } = pipeline;
  const serving = await startBaseHttp(base);
  opened.push(() => serving.closeOps());
  // Before anything is written: a write a killed process never finished leaves its temporary file.
  const stale = await state.removeStaleTemporaryFiles();
  if (stale.length > 0) log.info({ files: stale, dir: state.dir }, 'Removed temporary files a stopped process left in the state folder');
  const keys = await signingKeys(parts);
  opened.push(() => keys.close());
  await restoreActivity(state, store, fleet, log);
  await state.clearAgents();
  opened.push(() => source.stop());
  await pipeline.start();
  source.watch();

  const tokens = await keepTokenFiles(state, log);
  opened.push(() => tokens.close());
  const activity = startActivityFlush({
    store,
    controller,
    log,
    failure: 'Failed to write sync activity',
    everyMs: options.activityFlushMs ?? 5000,
    ...folderActivity(state, store, fleet, base.now),
    eachTick: tokens.repair,
  });
  opened.push(() => activity.stopTimer());
  const api = await serving.listenApi(config.tls);
  opened.push(() => serving.closeApi());
  keys.listening();
  const adminKeyFile = await state.ensureConsoleAdminKey(newAdminKey);
  const console = await startConsole(
    base,
    {
      mode: 'standalone',
      objects: source,
      editor: createManifestEditor({ dir: manifests, objects: source, log: log.child({ module: 'console' }) }),
      readTokenSecret: (ns, name) => source.writer.readTokenSecret(ns, name),
      adminKeyHashes: () => adminKeyHashesOf(state.consoleAdminKey),
    },
    opa,
  );
  opened.push(() => console.close());
  const unsubscribeOpa = await keepOpaConfigs(state, store, api, parts.signing, log);
  base.readiness.serving();
  log.info({ url: api.url, tenants: [...store.snapshot().tenants.keys()], problems: source.problems().length }, 'Serving');

  const stop = gracefulStop({
    base,
    quiesce: () => {
      source.stop();
      tokens.close();
      keys.close();
      unsubscribeOpa();
    },
    closeConsole: console.close,
    http: serving,
    activity,
    controller,
    fleet,
    closeThreads: pipeline.closeThreads,
  });
  return {
    apiUrl: api.url,
    opsUrl: serving.ops.url,
    caFile: api.caFile,
    store,
    state,
    source,
    controller,
    longPolls: serving.longPolls,
    console: { url: console.url, adminKeyFile },
    metrics: base.metrics,
    fleet,
    shadow: base.shadow,
    flushActivity: activity.flush,
    signing: parts.signing,
    checkSigningKeys: keys.check,
    stop,
  };
}
