// One drain of the work queue: rounds of reconciles in kind order (Secret, Connector, Directory, Rule,
// Bundle) until no reconcile asks for another key, one publish, then the status writes that changed.
import type { Logger } from 'pino';
import { BundleStatus, type Condition, readStatus } from '../api/index.ts';
import type { Store } from '../store/index.ts';
import { drive } from '../work/index.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { sameAsRecorded } from './recorded.ts';
import type { DrainLinter, LintPass } from './warnings.ts';
import { KIND_ORDER, keyText, parseKey, type ClusterWriter, type Kind, type ObjectKey, type ObjectReader } from './types.ts';

export interface ControllerMetrics {
  reconciled(kind: Kind, result: 'ok' | 'error', seconds: number): void;
  phases(kind: Kind, counts: ReadonlyMap<string, number>): void;
  queueDepth(depth: number): void;
  statusWritten(kind: Kind): void;
  /** A Bundle's RolledOut condition as its status records it; undefined: it has none (or the Bundle is gone). */
  rolledOut(tenant: string, bundle: string, status: Condition['status'] | undefined): void;
}

/** Status writes in flight at once. */
const STATUS_WRITERS = 8;
/** Rounds of follow-up keys in one drain (they converge in two or three; more wait for the next drain). */
const MAX_ROUNDS = 5;

/** A caller of settled(), with the drain whose publish it waits for. */
interface SettledWaiter {
  readonly drain: number;
  readonly resolve: () => void;
}

/** What drains work with: the controller's parts, and the queue state it shares with them. */
export interface DrainState {
  readonly objects: ObjectReader;
  readonly writer: ClusterWriter;
  readonly store: Store;
  readonly log: Logger;
  readonly metrics: ControllerMetrics | undefined;
  readonly deps: ReconcileDeps;
  readonly reconcile: (key: ObjectKey) => Promise<Outcome>;
  /** Keys (as text) waiting for the next drain; duplicates collapse. */
  readonly queue: Set<string>;
  /** The last phase of each object, by kind: the phase metrics. */
  readonly phases: Map<Kind, Map<string, string>>;
  readonly settledWaiters: SettledWaiter[];
  /** Failures in a row per key: the backoff of its next retry. */
  readonly failures: Map<string, number>;
  /** Drains started so far. */
  drains: number;
  /** Queues a key again after a failure, with backoff. */
  readonly retry: (text: string, err: unknown) => void;
  /** Lints the tenants a drain touched, after its publish (the leader's Warning conditions and Events). */
  readonly lint: DrainLinter | undefined;
}

type Outcomes = Map<string, { key: ObjectKey; outcome: Outcome }>;

interface StatusWrite {
  readonly key: ObjectKey;
  readonly status: Readonly<Record<string, unknown>>;
}

/**
 * A drain: rounds until no reconcile asks for another key (a Connector for its Bundles' status,
 * a Bundle for its Connector's), one publish, then the status writes. So what a first start
 * serves is published before any of its (possibly thousands of) status writes.
 */
export async function drainOnce(s: DrainState): Promise<void> {
  const drain = ++s.drains;
  let batch = [...s.queue].map(parseKey);
  s.queue.clear();
  const outcomes: Outcomes = new Map();
  for (let n = 1; batch.length > 0; n++) {
    const follow = await round(s, batch, outcomes);
    if (n >= MAX_ROUNDS) {
      for (const k of follow) s.queue.add(k);
      break;
    }
    batch = [...follow].map(parseKey);
  }
  await s.store.prepare((steps) => drive(steps, s.deps.slicer));
  s.store.publish();
  // What is served is published: readiness need not wait for lint or the status writes below (whose
  // echoes from the API server keep the queue busy while thousands are written).
  for (const w of s.settledWaiters.filter((x) => x.drain <= drain)) {
    s.settledWaiters.splice(s.settledWaiters.indexOf(w), 1);
    w.resolve();
  }
  const linted = s.lint && s.deps.leading() ? await lintTouched(s, s.lint, outcomes) : undefined;
  if (s.lint && !linted) s.lint.forget();
  const writes = changedStatuses(s, outcomes, linted);
  if (linted) writes.push(...(await rewritesOfAbridged(s, linted)));
  // Status writes are independent of each other: a few at a time (a first start writes thousands).
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < writes.length; i = next++) await writeStatus(s, writes[i] as StatusWrite);
  };
  await Promise.all(Array.from({ length: Math.min(STATUS_WRITERS, writes.length) }, worker));
  reportPhases(s);
  reportRolledOut(s, outcomes);
}

/** One round: the keys in kind order, with the bundles of tenants whose deployed rules changed. */
async function round(s: DrainState, batch: readonly ObjectKey[], outcomes: Outcomes): Promise<Set<string>> {
  const byKind = new Map<Kind, ObjectKey[]>(KIND_ORDER.map((k) => [k, []]));
  for (const k of batch) byKind.get(k.kind)?.push(k);
  const seen = new Set(batch.map(keyText));
  const done: Outcome[] = [];
  const follow = new Set<string>();
  for (const kind of KIND_ORDER) {
    const keys = byKind.get(kind) ?? [];
    if (kind === 'Bundle') keys.push(...bundlesToRebuild(s, done, seen));
    keys.sort((x, y) => (keyText(x) < keyText(y) ? -1 : 1));
    for (const key of keys) {
      const started = performance.now();
      try {
        const outcome = await s.reconcile(key);
        outcomes.set(keyText(key), { key, outcome });
        done.push(outcome);
        for (const next of outcome.enqueue ?? []) follow.add(keyText(next));
        s.failures.delete(keyText(key));
        s.metrics?.reconciled(key.kind, 'ok', (performance.now() - started) / 1000);
      } catch (err) {
        s.metrics?.reconciled(key.kind, 'error', (performance.now() - started) / 1000);
        s.retry(keyText(key), err);
      }
      // Decisions and bundle polls are answered between reconciles, never after a whole drain.
      await s.deps.slicer.pause();
    }
  }
  return follow;
}

/**
 * Every bundle of a tenant whose deployed rules or directory changed is rebuilt in the same round:
 * the keys of those not in the round yet (which `seen` then holds).
 */
function bundlesToRebuild(s: DrainState, done: readonly Outcome[], seen: Set<string>): ObjectKey[] {
  const keys: ObjectKey[] = [];
  const tenants = new Set(done.map((o) => o.rebuildIn).filter((t): t is string => t !== undefined));
  for (const tenant of tenants) {
    for (const b of [
      ...s.objects.list('Bundle', tenant).map((o) => o.metadata.name),
      ...s.store.draft.bundles(tenant).map((b) => b.name),
    ]) {
      const k: ObjectKey = { kind: 'Bundle', namespace: tenant, name: b };
      if (!seen.has(keyText(k))) {
        seen.add(keyText(k));
        keys.push(k);
      }
    }
  }
  return keys;
}

/** Lints the tenants of the keys this drain reconciled. */
/**
 * Lint never decides anything: a failure of it (a check, an Event) is logged and the drain's status
 * writes go on without Warning conditions, as the webhook admits without warnings.
 */
async function lintTouched(s: DrainState, lint: DrainLinter, outcomes: Outcomes): Promise<LintPass | undefined> {
  const reconciled = new Set([...outcomes].filter(([, o]) => o.outcome.status !== undefined).map(([text]) => text));
  try {
    return await lint.pass(
      [...outcomes.values()].map((o) => o.key),
      reconciled,
      s.deps,
    );
  } catch (err) {
    s.log.error({ err }, 'Failed to lint; statuses are written without Warning conditions');
    return undefined;
  }
}

/**
 * Records each outcome's phase, and lists the statuses this replica writes: as leader, where they
 * changed (with the Warning condition of `linted`, which also rewrites objects whose findings changed).
 */
function changedStatuses(s: DrainState, outcomes: Outcomes, linted: LintPass | undefined): StatusWrite[] {
  const writes: StatusWrite[] = [];
  for (const { key, outcome } of outcomes.values()) {
    recordPhase(s, key, outcome.phase);
    if (!outcome.status || !s.deps.leading()) continue;
    const obj = s.objects.get(key.kind, key.namespace, key.name);
    const status = linted ? linted.withWarning(key, outcome.status) : outcome.status;
    if (!obj || sameAsRecorded(obj, status)) continue;
    writes.push({ key, status });
  }
  if (linted && s.deps.leading()) writes.push(...linted.rewrites);
  return writes;
}

/**
 * Objects whose findings changed with another object's change, but whose recorded status the source
 * keeps abridged: reconciled again here (their object has not changed since its last reconcile, or
 * its key would be queued, so this changes nothing in force) for the whole status with the new
 * Warning condition, written with this drain's, with no other drain and no other lint pass. A key
 * queued meanwhile waits for the next drain, which writes it.
 */
async function rewritesOfAbridged(s: DrainState, linted: LintPass): Promise<StatusWrite[]> {
  const writes: StatusWrite[] = [];
  for (const key of linted.again) {
    if (!s.deps.leading() || s.queue.has(keyText(key))) continue;
    let outcome: Outcome;
    try {
      outcome = await s.reconcile(key);
    } catch (err) {
      s.retry(keyText(key), err);
      continue;
    }
    const obj = s.objects.get(key.kind, key.namespace, key.name);
    if (outcome.rebuildIn !== undefined) s.queue.add(keyText(key));
    else if (outcome.status && obj && !sameAsRecorded(obj, linted.withWarning(key, outcome.status)))
      writes.push({ key, status: linted.withWarning(key, outcome.status) });
  }
  return writes;
}

async function writeStatus(s: DrainState, { key, status }: StatusWrite): Promise<void> {
  try {
    await s.writer.writeStatus(key, status);
    s.metrics?.statusWritten(key.kind);
    s.log.debug({ kind: key.kind, key: keyText(key) }, 'Wrote status');
  } catch (err) {
    s.retry(keyText(key), err);
  }
}

function recordPhase(s: DrainState, key: ObjectKey, phase: string | undefined): void {
  let m = s.phases.get(key.kind);
  if (!m) {
    m = new Map();
    s.phases.set(key.kind, m);
  }
  if (phase === undefined || s.objects.get(key.kind, key.namespace, key.name) === undefined) m.delete(`${key.namespace}/${key.name}`);
  else m.set(`${key.namespace}/${key.name}`, phase);
}

function reportPhases(s: DrainState): void {
  for (const [kind, m] of s.phases) {
    const counts = new Map<string, number>();
    for (const p of m.values()) counts.set(p, (counts.get(p) ?? 0) + 1);
    s.metrics?.phases(kind, counts);
  }
}

/**
 * RolledOut as each reconciled Bundle's status records it once this drain's writes are done: what
 * `kubectl get bundles -o wide` shows, on every replica alike (a follower reconciles a Bundle when
 * the leader's status write reaches its watch), so a new leader never leaves an old value behind.
 */
function reportRolledOut(s: DrainState, outcomes: Outcomes): void {
  if (!s.metrics) return;
  for (const { key } of outcomes.values()) {
    if (key.kind !== 'Bundle') continue;
    const obj = s.objects.get('Bundle', key.namespace, key.name);
    const conditions = obj ? readStatus(BundleStatus, obj.raw['status']).conditions : undefined;
    s.metrics.rolledOut(key.namespace, key.name, conditions?.find((c) => c.type === 'RolledOut')?.status);
  }
}
