// The work queue: keys collapse, a drain runs them in kind order (Secret, Connector, Directory, Rule, Bundle),
// publishes one snapshot, then writes the statuses that changed. One drain runs at a time.
import type { Logger } from 'pino';
import { EMPTY_SUMMARY } from '../fleet/index.ts';
import { IN_THREAD_PACKER, type BundlePacker } from '../bundle/index.ts';
import type { Store } from '../store/index.ts';
import { createSlicer, drive, type Slicer } from '../work/slice.ts';
import { reconcileBundle } from './bundle.ts';
import { sameStatus } from './conditions.ts';
import { reconcileConnector } from './connector.ts';
import { createDirectoryReconciler } from './directory.ts';
import type { AgentView, Outcome, ReconcileDeps } from './deps.ts';
import { createRuleReconciler } from './rule.ts';
import { reconcileSecret } from './secret.ts';
import { KIND_ORDER, keyText, parseKey, type ClusterWriter, type Kind, type ObjectKey, type ObjectReader } from './types.ts';

export interface ControllerMetrics {
  reconciled(kind: Kind, result: 'ok' | 'error', seconds: number): void;
  phases(kind: Kind, counts: ReadonlyMap<string, number>): void;
  queueDepth(depth: number): void;
  statusWritten(kind: Kind): void;
}

export interface ControllerOptions {
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
  /** Gives the event loop back between slices of a drain (default: every SLICE_BUDGET_MS of work). */
  readonly slicer?: Slicer;
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
}

/** Without a registry (tests), no bundle has agents. */
const NO_AGENTS: AgentView = { windowSeconds: 300, summary: () => EMPTY_SUMMARY };

/** Status writes in flight at once. */
const STATUS_WRITERS = 8;
/** Rounds of follow-up keys in one drain (they converge in two or three; more wait for the next drain). */
const MAX_ROUNDS = 5;

export function createController(options: ControllerOptions): Controller {
  const { objects, writer, store, log } = options;
  const now = options.now ?? (() => new Date());
  const reconcileRule = createRuleReconciler();
  const reconcileDirectory = createDirectoryReconciler();
  const queue = new Set<string>();
  const failures = new Map<string, number>();
  const retries = new Set<NodeJS.Timeout>();
  const phases = new Map<Kind, Map<string, string>>();
  let running: Promise<void> | undefined;
  /** Waiters of settled(), each with the drain whose publish it waits for. */
  const settledWaiters: { drain: number; resolve: () => void }[] = [];
  let drains = 0;
  let stopped = false;

  const leading = options.leading ?? (() => true);
  const deps: ReconcileDeps = {
    objects,
    writer,
    draft: store.draft,
    activity: store.activity,
    now,
    log,
    leading,
    ...(options.random ? { random: options.random } : {}),
    agents: options.agents ?? NO_AGENTS,
    packer: options.packer ?? IN_THREAD_PACKER,
    slicer: options.slicer ?? createSlicer(),
  };

  async function reconcile(key: ObjectKey): Promise<Outcome> {
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
  }

  function retry(text: string, err: unknown): void {
    const n = (failures.get(text) ?? 0) + 1;
    failures.set(text, n);
    const delayMs = Math.min((options.retryMs ?? 500) * 2 ** (n - 1), options.maxRetryMs ?? 60_000);
    log.error({ err, key: text, attempt: n, delayMs }, 'Failed to reconcile; will retry');
    if (stopped) return;
    const timer = setTimeout(() => {
      retries.delete(timer);
      add(text);
    }, delayMs);
    timer.unref();
    retries.add(timer);
  }

  function recordPhase(key: ObjectKey, phase: string | undefined): void {
    let m = phases.get(key.kind);
    if (!m) {
      m = new Map();
      phases.set(key.kind, m);
    }
    if (phase === undefined || objects.get(key.kind, key.namespace, key.name) === undefined) m.delete(`${key.namespace}/${key.name}`);
    else m.set(`${key.namespace}/${key.name}`, phase);
  }

  /** One round: the keys in kind order, with the bundles of tenants whose deployed rules changed. */
  async function round(batch: readonly ObjectKey[], outcomes: Map<string, { key: ObjectKey; outcome: Outcome }>): Promise<Set<string>> {
    const byKind = new Map<Kind, ObjectKey[]>(KIND_ORDER.map((k) => [k, []]));
    for (const k of batch) byKind.get(k.kind)?.push(k);
    const seen = new Set(batch.map(keyText));
    const done: Outcome[] = [];
    const follow = new Set<string>();
    for (const kind of KIND_ORDER) {
      const keys = byKind.get(kind) ?? [];
      if (kind === 'Bundle') {
        // Every bundle of a tenant whose deployed rules or directory changed is rebuilt in this same round.
        const tenants = new Set(done.map((o) => o.rebuildIn).filter((t): t is string => t !== undefined));
        for (const tenant of tenants) {
          for (const b of [
            ...objects.list('Bundle', tenant).map((o) => o.metadata.name),
            ...store.draft.bundles(tenant).map((b) => b.name),
          ]) {
            const k: ObjectKey = { kind: 'Bundle', namespace: tenant, name: b };
            if (!seen.has(keyText(k))) {
              seen.add(keyText(k));
              keys.push(k);
            }
          }
        }
      }
      keys.sort((x, y) => (keyText(x) < keyText(y) ? -1 : 1));
      for (const key of keys) {
        const started = performance.now();
        try {
          const outcome = await reconcile(key);
          outcomes.set(keyText(key), { key, outcome });
          done.push(outcome);
          for (const next of outcome.enqueue ?? []) follow.add(keyText(next));
          failures.delete(keyText(key));
          options.metrics?.reconciled(key.kind, 'ok', (performance.now() - started) / 1000);
        } catch (err) {
          options.metrics?.reconciled(key.kind, 'error', (performance.now() - started) / 1000);
          retry(keyText(key), err);
        }
        // Decisions and bundle polls are answered between reconciles, never after a whole drain.
        await deps.slicer.pause();
      }
    }
    return follow;
  }

  /**
   * A drain: rounds until no reconcile asks for another key (a Connector for its Bundles' status,
   * a Bundle for its Connector's), one publish, then the status writes. So what a first start
   * serves is published before any of its (possibly thousands of) status writes.
   */
  async function drainOnce(): Promise<void> {
    const drain = ++drains;
    let batch = [...queue].map(parseKey);
    queue.clear();
    const outcomes = new Map<string, { key: ObjectKey; outcome: Outcome }>();
    for (let n = 1; batch.length > 0; n++) {
      const follow = await round(batch, outcomes);
      if (n >= MAX_ROUNDS) {
        for (const k of follow) queue.add(k);
        break;
      }
      batch = [...follow].map(parseKey);
    }
    await store.prepare((steps) => drive(steps, deps.slicer));
    store.publish();
    const writes: { key: ObjectKey; status: Readonly<Record<string, unknown>> }[] = [];
    for (const { key, outcome } of outcomes.values()) {
      recordPhase(key, outcome.phase);
      if (!outcome.status || !leading()) continue;
      const obj = objects.get(key.kind, key.namespace, key.name);
      if (!obj || sameStatus(obj.raw['status'], outcome.status)) continue;
      writes.push({ key, status: outcome.status });
    }
    // What is served is published: readiness need not wait for the status writes below (whose
    // echoes from the API server keep the queue busy while thousands are written).
    for (const w of settledWaiters.filter((x) => x.drain <= drain)) {
      settledWaiters.splice(settledWaiters.indexOf(w), 1);
      w.resolve();
    }
    // Status writes are independent of each other: a few at a time (a first start writes thousands).
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < writes.length; i = next++) {
        const { key, status } = writes[i] as (typeof writes)[number];
        try {
          await writer.writeStatus(key, status);
          options.metrics?.statusWritten(key.kind);
          log.debug({ kind: key.kind, key: keyText(key) }, 'Wrote status');
        } catch (err) {
          retry(keyText(key), err);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(STATUS_WRITERS, writes.length) }, worker));
    for (const [kind, m] of phases) {
      const counts = new Map<string, number>();
      for (const p of m.values()) counts.set(p, (counts.get(p) ?? 0) + 1);
      options.metrics?.phases(kind, counts);
    }
  }

  async function pump(): Promise<void> {
    try {
      while (queue.size > 0) {
        options.metrics?.queueDepth(queue.size);
        await drainOnce();
      }
    } finally {
      options.metrics?.queueDepth(0);
      running = undefined;
      for (const w of settledWaiters.splice(0)) w.resolve();
    }
  }

  function add(text: string): void {
    queue.add(text);
    running ??= Promise.resolve().then(pump);
  }

  return {
    enqueue: (key) => add(keyText(key)),
    async idle() {
      while (running) await running;
    },
    settled() {
      if (!running && queue.size === 0) return Promise.resolve();
      // Keys waiting: the next drain takes them all. None: the running drain is the last one needed.
      const drain = queue.size > 0 ? drains + 1 : drains;
      return new Promise<void>((resolve) => settledWaiters.push({ drain, resolve }));
    },
    stop() {
      stopped = true;
      for (const t of retries) clearTimeout(t);
      retries.clear();
    },
  };
}
