// What both modes make alike, in the order they depend on each other, each part made once and never
// assigned again: the logger, the clock, metrics, the store, the work queue (sources and the fleet
// enqueue into it before the controller that drains it exists), readiness, what the console's live
// updates follow, the fleet, the controller's common options, and the HTTP side.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { createWorkQueue, type Controller, type ControllerOptions, type WorkQueue } from '../controller/index.ts';
import { type Destination, type Fleet, startFleet } from '../fleet/index.ts';
import type { AdmissionDeps } from '../http/index.ts';
import { createLogger } from '../log.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import { type Serving, startServing } from '../server/index.ts';
import { createShadowLedger, type LocalShadowLedger } from '../shadow/index.ts';
import { createStore, type Store } from '../store/index.ts';
import { type Changes, createChanges } from './changes.ts';

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
  /** This replica's shadow counts (docs/rules.md, "Shadow decisions"). */
  readonly shadow: LocalShadowLedger;
  flushActivity(): Promise<void>;
  /** Graceful stop: no new connections, held long polls answered, in-flight requests finished. */
  stop(): Promise<void>;
}

/** /readyz: not ready (with the reason given) until `serving()`, and again from `stopping()`. */
export interface Readiness {
  notReady(): string | undefined;
  serving(): void;
  stopping(): void;
}

function createReadiness(reason: string): Readiness {
  let ready = false;
  return {
    notReady: () => (ready ? undefined : reason),
    serving: () => {
      ready = true;
    },
    stopping: () => {
      ready = false;
    },
  };
}

/** The parts of a mode made before its source: nothing listens or runs yet. */
export interface Base {
  readonly config: Config;
  readonly log: Logger;
  readonly now: () => Date;
  /** The same clock in epoch milliseconds, without a Date made per call (decision timestamps). */
  readonly nowMs: () => number;
  readonly metrics: Metrics;
  readonly store: Store;
  /** What the source, the fleet and the Lease enqueue into; the controller drains it. */
  readonly queue: WorkQueue;
  readonly readiness: Readiness;
  /** Per tenant: publishes, agent changes and status writes (what the console's live updates follow). */
  readonly changes: Changes;
  /** The fleet loop (agents, recent decisions, decision log), running. */
  readonly fleet: Fleet;
  /** The one shadow ledger of the process: fed by decisions, following each publish, read by metrics (and status). */
  readonly shadow: LocalShadowLedger;
}

/** Makes the base of a mode; `notReady` is what /readyz says until the mode serves. */
export function createBase(config: Config, options: CommonOptions, notReady: string): Base {
  const log = options.log ?? createLogger(config.logLevel);
  const now = options.now ?? (() => new Date());
  const given = options.now;
  const nowMs = given === undefined ? Date.now : () => given().getTime();
  const metrics = createMetrics();
  const store = createStore();
  const queue = createWorkQueue();
  const fleet = startFleet({
    config,
    store,
    metrics,
    log: log.child({ module: 'fleet' }),
    now: nowMs,
    enqueue: queue.enqueue,
    ...(options.agentStatusIntervalMs !== undefined ? { statusIntervalMs: options.agentStatusIntervalMs } : {}),
    ...(options.stdout ? { stdout: options.stdout } : {}),
  });
  const changes = createChanges({ store, agents: fleet.agents });
  // Named after the pod in Kubernetes (its hostname): status sums replica sessions, each once.
  const shadow = createShadowLedger({ replica: hostname(), now: nowMs });
  store.onBundleChange((_changed, snapshot, tenants) => {
    for (const t of tenants) shadow.follow(t, snapshot.tenants.get(t));
  });
  metrics.shadowFrom(() => shadow.all());
  return { config, log, now, nowMs, metrics, store, queue, readiness: createReadiness(notReady), changes, fleet, shadow };
}

/** The controller options both modes give alike (each adds its source, its writer and its packer). */
export function controllerBase(base: Base, options: CommonOptions): Omit<ControllerOptions, 'objects' | 'writer' | 'packer'> {
  return {
    queue: base.queue,
    store: base.store,
    log: base.log.child({ module: 'controller' }),
    now: base.now,
    metrics: base.metrics.controller,
    agents: base.fleet.view,
    lint: true,
    ...(options.random ? { random: options.random } : {}),
  };
}

/**
 * Opens the ops listener; /readyz follows `base.readiness`. The API listener opens later, with the
 * admission webhook when `admission` is given (Kubernetes mode).
 */
export function startBaseHttp(base: Base, defaultPublicUrl?: string, admission?: AdmissionDeps): Promise<Serving> {
  return startServing({
    config: base.config,
    store: base.store,
    metrics: base.metrics,
    log: base.log,
    now: base.now,
    nowMs: base.nowMs,
    fleet: base.fleet,
    shadow: base.shadow,
    notReady: base.readiness.notReady,
    ...(defaultPublicUrl === undefined ? {} : { defaultPublicUrl }),
    ...(admission === undefined ? {} : { admission }),
  });
}
