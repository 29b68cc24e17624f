// What both modes build alike around their source: the logger, the clock, metrics, the store,
// readiness, the fleet loop, the controller's common options and the HTTP side. Parts made before
// the controller enqueue through the core, which hands keys on once the controller is attached.
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Controller, ControllerOptions, ObjectKey } from '../controller/index.ts';
import type { Destination } from '../fleet/index.ts';
import type { AdmissionDeps } from '../http/index.ts';
import { createLogger } from '../log.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import { createStore, type Store } from '../store/index.ts';
import { startFleet, type Fleet } from './fleet.ts';
import { type Changes, createChanges } from './console.ts';
import { startServing, type Serving } from './http.ts';

/** The options both startService and startOperator take. */
export interface CommonOptions {
  readonly log?: Logger;
  readonly now?: () => Date;
  readonly random?: (size: number) => Uint8Array;
  /** Shortest time between two agent-driven status refreshes of one Bundle (default 5 s). */
  readonly agentStatusIntervalMs?: number;
  /** Stdout as the log writes it, for --decision-log stdout (lines never interleave). */
  readonly stdout?: Destination;
}

/** What both modes hand back once they serve. */
export interface Running {
  readonly apiUrl: string;
  readonly opsUrl: string;
  /** The certificate (or CA) clients should trust, when the API speaks TLS. */
  readonly caFile: string | undefined;
  readonly store: Store;
  readonly controller: Controller;
  readonly metrics: Metrics;
  /** What the OPA agents report, their recent decisions, and the decision log. */
  readonly fleet: Fleet;
  flushActivity(): Promise<void>;
  /** Graceful stop: no new connections, held long polls answered, in-flight requests finished. */
  stop(): Promise<void>;
}

export interface Core {
  readonly config: Config;
  readonly log: Logger;
  readonly now: () => Date;
  readonly metrics: Metrics;
  readonly store: Store;
  /** /readyz: false until the first build is served, and again from the start of stop(). */
  ready: boolean;
  /** Attached once created; keys enqueued before then are dropped (the first list enqueues every key). */
  controller: Controller | undefined;
  readonly enqueue: (key: ObjectKey) => void;
  /** Moves with every publish, agent change and status write, per tenant: what the console's live updates follow. */
  readonly changes: Changes;
}

/** The core of a mode: nothing listens or runs yet. */
export function createCore(config: Config, options: CommonOptions): Core {
  const core: Core = {
    config,
    log: options.log ?? createLogger(config.logLevel),
    now: options.now ?? (() => new Date()),
    metrics: createMetrics(),
    store: createStore(),
    ready: false,
    controller: undefined,
    enqueue: (key) => core.controller?.enqueue(key),
    changes: createChanges(),
  };
  core.store.onBundleChange((_changed, _snapshot, tenants) => {
    for (const tenant of tenants) core.changes.note(tenant);
  });
  return core;
}

/** Starts the fleet loop (agents, recent decisions, decision log) over the core's store. */
export function startCoreFleet(core: Core, options: CommonOptions): Fleet {
  const fleet = startFleet({
    config: core.config,
    store: core.store,
    metrics: core.metrics,
    log: core.log.child({ module: 'fleet' }),
    now: () => core.now().getTime(),
    enqueue: core.enqueue,
    ...(options.agentStatusIntervalMs !== undefined ? { statusIntervalMs: options.agentStatusIntervalMs } : {}),
    ...(options.stdout ? { stdout: options.stdout } : {}),
  });
  fleet.agents.onChange((tenant) => core.changes.note(tenant));
  return fleet;
}

/** The controller options both modes give alike (each adds its source and its packer). */
export function controllerBase(core: Core, fleet: Fleet, options: CommonOptions): Omit<ControllerOptions, 'objects' | 'writer' | 'packer'> {
  return {
    store: core.store,
    log: core.log.child({ module: 'controller' }),
    now: core.now,
    metrics: core.metrics.controller,
    agents: fleet.view,
    lint: true,
    ...(options.random ? { random: options.random } : {}),
  };
}

/**
 * Opens the ops listener; /readyz answers `notReady` until `core.ready`. The API listener opens later,
 * with the admission webhook when `admission` is given (Kubernetes mode).
 */
export function startCoreHttp(
  core: Core,
  fleet: Fleet,
  notReady: string,
  defaultPublicUrl?: string,
  admission?: AdmissionDeps,
): Promise<Serving> {
  return startServing({
    config: core.config,
    store: core.store,
    metrics: core.metrics,
    log: core.log,
    now: core.now,
    fleet,
    notReady: () => (core.ready ? undefined : notReady),
    ...(defaultPublicUrl === undefined ? {} : { defaultPublicUrl }),
    ...(admission === undefined ? {} : { admission }),
  });
}
