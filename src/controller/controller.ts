// The work queue: keys collapse, a drain runs them (drain.ts) and publishes one snapshot, then writes
// the statuses that changed. One drain runs at a time; a key that failed comes back with backoff.
import type { Logger } from 'pino';
import { createSigningHolder, type SigningHolder } from './signing.ts';
import { EMPTY_SUMMARY } from '../fleet/index.ts';
import { IN_THREAD_PACKER, type BundlePacker } from '../bundle/index.ts';
import type { Store } from '../store/index.ts';
import { createSlicer, type Slicer } from '../work/index.ts';
import { reconcileBundle } from './bundle.ts';
import { reconcileConnector } from './connector.ts';
import { createDirectoryReconciler } from './directory.ts';
import type { AgentView, Outcome, ReconcileDeps, ShadowView } from './deps.ts';
import { drainOnce, type ControllerMetrics, type DrainState } from './drain.ts';
import { createDrainLinter } from './warnings.ts';
import { asDrained, drainedQueue, type DrainedQueue, type WorkQueue } from './queue.ts';
import { createRuleReconciler } from './rule.ts';
import { reconcileSecret } from './secret.ts';
import type { ClusterWriter, ObjectKey, ObjectReader } from './types.ts';

export interface ControllerOptions {
  /** The queue it drains (createWorkQueue), when others enqueue before the controller exists; default a new one. */
  readonly queue?: WorkQueue;
  readonly objects: ObjectReader;
  readonly writer: ClusterWriter;
  readonly store: Store;
  readonly log: Logger;
  readonly now?: () => Date;
  readonly random?: (size: number) => Uint8Array;
  readonly metrics?: ControllerMetrics;
  /** Retry delay after a failed reconcile, doubled per failure up to maxRetryMs. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
  /** Whether this replica is the leader (default: always, as in standalone mode). */
  readonly leading?: () => boolean;
  /** The OPA agents per bundle, for Bundle status (agents, RolledOut). */
  readonly agents?: AgentView;
  /** Hashes and packs bundles (default: in this thread; the service passes a background thread's). */
  readonly packer?: BundlePacker;
  /** The keys bundles are signed with (default: unsigned, as the offline commands build). */
  readonly signing?: SigningHolder;
  /** Gives the event loop back between slices of a drain (default: every SLICE_BUDGET_MS of work). */
  readonly slicer?: Slicer;
  /**
   * Lint the tenants each drain touched, after its publish: Warning conditions and Events (leader
   * only; controller/warnings.ts). The modes turn it on; off by default, so a test sees only what it tests.
   */
  readonly lint?: boolean;
  /**
   * Keys wait until release() (Kubernetes mode: until the first list and the first Lease attempt), so
   * a start reconciles each object once, as what this replica turned out to be. Draining while still
   * a follower made a new leader's pass reconcile all 10,200 objects of a large start a second time.
   */
  readonly held?: boolean;
  /** Shadow counts summed over replicas, for status.shadow of Proposed rules and rules marked for removal (default: none). */
  readonly shadow?: ShadowView;
}

export interface Controller {
  enqueue(key: ObjectKey): void;
  /** Resolves once the queue is empty and no drain is running. */
  idle(): Promise<void>;
  /**
   * Resolves once everything queued now has been reconciled and published (status writes, and keys
   * queued later, may still be under way): what readiness waits for.
   */
  settled(): Promise<void>;
  /** Stops retries; a running drain finishes. */
  stop(): void;
  /** Lets a held controller drain (see ControllerOptions.held); nothing for one that was not held. */
  release(): void;
}

/** Without a registry (tests), no bundle has agents. */
const NO_AGENTS: AgentView = { windowSeconds: 300, summary: () => EMPTY_SUMMARY, agents: () => [] };

/** The queue's state: what drains share, plus the retry timers and the drain under way. */
interface QueueState extends DrainState {
  readonly keys: DrainedQueue;
  readonly retryMs: number;
  readonly maxRetryMs: number;
  readonly retries: Set<NodeJS.Timeout>;
  running: Promise<void> | undefined;
  stopped: boolean;
  held: boolean;
}

export function createController(options: ControllerOptions): Controller {
  const deps = reconcileDeps(options);
  const keys = options.queue ? asDrained(options.queue) : drainedQueue();
  const s: QueueState = {
    keys,
    objects: options.objects,
    writer: options.writer,
    store: options.store,
    log: options.log,
    metrics: options.metrics,
    deps,
    reconcile: dispatcher(deps),
    queue: keys.keys,
    phases: new Map(),
    settledWaiters: [],
    failures: new Map(),
    drains: 0,
    retry: (text, err) => retry(s, text, err),
    lint: options.lint ? createDrainLinter() : undefined,
    retryMs: options.retryMs ?? 500,
    maxRetryMs: options.maxRetryMs ?? 60_000,
    retries: new Set(),
    running: undefined,
    stopped: false,
    held: options.held ?? false,
  };
  const wake = (): void => {
    if (!s.held) s.running ??= Promise.resolve().then(() => pump(s));
  };
  keys.onAdd(wake);
  // New keys sign every bundle again (a rotation's start, a retirement, a first key, a rejected
  // key's condition): one key per Bundle. The default (unsigned) never changes.
  const unsubscribe =
    options.signing?.onChange(() => {
      for (const b of s.objects.list('Bundle'))
        keys.enqueue({ kind: 'Bundle', namespace: b.metadata.namespace ?? '', name: b.metadata.name });
    }) ?? (() => false);
  return {
    enqueue: keys.enqueue,
    async idle() {
      while (s.running) await s.running;
    },
    settled: () => settled(s),
    stop() {
      s.stopped = true;
      unsubscribe();
      for (const t of s.retries) clearTimeout(t);
      s.retries.clear();
    },
    release() {
      s.held = false;
      if (s.queue.size > 0) wake();
    },
  };
}

/** Bundles built without signatures: what a controller signs with when it is given no keys. */
const UNSIGNED: SigningHolder = createSigningHolder({ unsigned: true });

function reconcileDeps(options: ControllerOptions): ReconcileDeps {
  return {
    objects: options.objects,
    writer: options.writer,
    draft: options.store.draft,
    activity: options.store.activity,
    now: options.now ?? (() => new Date()),
    log: options.log,
    leading: options.leading ?? (() => true),
    ...(options.random ? { random: options.random } : {}),
    agents: options.agents ?? NO_AGENTS,
    packer: options.packer ?? IN_THREAD_PACKER,
    signing: options.signing ?? UNSIGNED,
    slicer: options.slicer ?? createSlicer(),
    ...(options.shadow ? { shadow: options.shadow } : {}),
  };
}

/** One reconcile function per kind; Rules and Directories remember what they read before. */
function dispatcher(deps: ReconcileDeps): (key: ObjectKey) => Promise<Outcome> {
  const reconcileRule = createRuleReconciler();
  const reconcileDirectory = createDirectoryReconciler();
  return async function reconcile(key) {
    switch (key.kind) {
      case 'Secret':
        return reconcileSecret(key, deps);
      case 'Connector':
        return reconcileConnector(key, deps);
      case 'Directory':
        return reconcileDirectory(key, deps);
      case 'Rule':
        return reconcileRule(key, deps);
      case 'Bundle':
        return reconcileBundle(key, deps);
    }
  };
}

function retry(s: QueueState, text: string, err: unknown): void {
  const n = (s.failures.get(text) ?? 0) + 1;
  s.failures.set(text, n);
  const delayMs = Math.min(s.retryMs * 2 ** (n - 1), s.maxRetryMs);
  s.log.error({ err, key: text, attempt: n, delayMs }, 'Failed to reconcile; will retry');
  if (s.stopped) return;
  const timer = setTimeout(() => {
    s.retries.delete(timer);
    s.keys.add(text);
  }, delayMs);
  timer.unref();
  s.retries.add(timer);
}

async function pump(s: QueueState): Promise<void> {
  try {
    while (s.queue.size > 0) {
      s.metrics?.queueDepth(s.queue.size);
      await drainOnce(s);
    }
  } finally {
    s.metrics?.queueDepth(0);
    s.running = undefined;
    for (const w of s.settledWaiters.splice(0)) w.resolve();
  }
}

function settled(s: QueueState): Promise<void> {
  if (!s.running && s.queue.size === 0) return Promise.resolve();
  // Keys waiting: the next drain takes them all. None: the running drain is the last one needed.
  const drain = s.queue.size > 0 ? s.drains + 1 : s.drains;
  return new Promise<void>((resolve) => s.settledWaiters.push({ drain, resolve }));
}
