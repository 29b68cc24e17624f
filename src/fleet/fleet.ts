// What both modes do with what the OPA fleet reports: remember agents (expired after a silence),
// note when each bundle revision is published (for propagation times), keep the per-bundle agent
// gauges, and ask the controller to refresh a Bundle's status when its agents changed, at most once
// per bundle per `statusIntervalMs`, so a large fleet never turns into a flood of status writes.
import type { Logger } from 'pino';
import type { Counter, Gauge, Histogram } from 'prom-client';
import { bundleKey, type Store } from '../store/index.ts';
import { type Agent, type AgentState, summarize } from './agents.ts';
import type { UploadReader } from './intake.ts';
import { createRecentDecisions, type RecentDecisions } from './recent.ts';
import { createAgentRegistry, type AgentRegistry } from './registry.ts';
import { createDecisionSink, MAX_BACKLOG_BYTES, type DecisionSink, type Destination, type SinkTarget } from './sink.ts';
import { createUploadThread } from './uploads-thread.ts';

/** Shortest time between two agent-driven status refreshes of one Bundle. */
export const STATUS_INTERVAL_MS = 5000;
const STATES: readonly AgentState[] = ['current', 'behind', 'failing'];

export interface Fleet {
  readonly agents: AgentRegistry;
  readonly recent: RecentDecisions;
  /** The decision log (--decision-log); the service's own decisions go there too. */
  readonly sink: DecisionSink;
  /** Largest status report or decision-log upload, received and decompressed (413 beyond). */
  readonly maxUploadBytes: number;
  /** Reads uploads off the event loop (the uploads thread). */
  readonly uploads: UploadReader;
  /**
   * What a Bundle reconcile reads: the agents of a bundle against the revision it serves, and the
   * agents themselves (KeyRotated names the key each verifies with), as the last refresh took them.
   */
  readonly view: {
    readonly windowSeconds: number;
    summary: AgentRegistry['summary'];
    agents(tenant: string, bundle: string, nowMs: number): readonly Agent[];
  };
  /** When this fleet began taking status reports (ms): no key is retired before a whole window since. */
  readonly listeningSinceMs: number;
  /** Stops the timers and the uploads thread, and closes the decision log (after writing what it holds). */
  stop(): Promise<void>;
}

/** The fleet's settings, as the flags give them (--decision-log, --agent-expiry-seconds, --max-agents, --max-upload-bytes). */
export interface FleetSettings {
  readonly decisionLog: SinkTarget;
  readonly agentExpirySeconds: number;
  readonly maxAgents: number;
  readonly maxUploadBytes: number;
}

/** The metrics the fleet keeps (metrics.ts registers them). */
export interface FleetMetrics {
  readonly agents: Gauge<'tenant' | 'bundle' | 'state'>;
  readonly propagationSeconds: Histogram;
  readonly agentsEvicted: Counter;
  readonly uploadThreadStops: Counter;
  readonly decisionLogDropped: Counter;
}

/** A Bundle whose status should be computed again (the controller's key of it). */
interface BundleKey {
  readonly kind: 'Bundle';
  readonly namespace: string;
  readonly name: string;
}

export interface FleetOptions {
  readonly config: FleetSettings;
  readonly store: Store;
  readonly metrics: FleetMetrics;
  readonly log: Logger;
  readonly now: () => number;
  /** Asks for a Bundle's status to be computed again. */
  readonly enqueue: (key: BundleKey) => void;
  readonly statusIntervalMs?: number;
  /** Stdout shared with the log (--decision-log stdout), so their lines never interleave. */
  readonly stdout?: Destination;
}

export function startFleet(o: FleetOptions): Fleet {
  const { store, metrics, log, now } = o;
  const listeningSinceMs = now();
  const intervalMs = o.statusIntervalMs ?? STATUS_INTERVAL_MS;
  const windowMs = o.config.agentExpirySeconds * 1000;
  const agents = createAgentRegistry({
    windowMs,
    maxAgents: o.config.maxAgents,
    onPropagated: (seconds) => metrics.propagationSeconds.observe(seconds),
    onEvicted: () => metrics.agentsEvicted.inc(),
  });
  const recent = createRecentDecisions();
  // Status reports and decision logs are read in a thread of their own, started with the first upload.
  const uploads = createUploadThread({
    maxUploadBytes: o.config.maxUploadBytes,
    onStop: (reason) => {
      metrics.uploadThreadStops.inc();
      log.warn({ reason }, 'Lost the uploads thread under an upload; the next upload starts another');
    },
  });
  const target = o.config.decisionLog;
  const sink = createDecisionSink(target, {
    onDrop: (lines) => {
      metrics.decisionLogDropped.inc(lines);
      log.warn({ lines }, `Dropped decision log lines: the decision log fell more than ${MAX_BACKLOG_BYTES / (1024 * 1024)} MB behind`);
    },
    onError: (err) =>
      log.error({ err, decisionLog: target.kind === 'file' ? target.path : target.kind }, 'Failed to write the decision log'),
    ...(target.kind === 'stdout' && o.stdout ? { stream: o.stdout } : {}),
  });

  const revisionOf = (tenant: string, bundle: string): number | undefined =>
    store.snapshot().tenants.get(tenant)?.bundles.get(bundle)?.built.revision;
  const gauges = (tenant: string, bundle: string): void => {
    const summary = agents.summary(tenant, bundle, revisionOf(tenant, bundle), now());
    for (const state of STATES) metrics.agents.set({ tenant, bundle, state }, summary[state]);
  };

  // What Bundle status shows of a bundle's agents: taken only when a refresh fires. A reconcile for
  // any other reason (the echo of our own status write, a resync) reads the same agents, so status
  // moves at most once per interval however fast the reports come.
  const shown = new Map<string, Agent[]>();
  // Each bundle is refreshed at once when nothing was sent for it lately, else when its interval ends.
  const last = new Map<string, number>();
  const pending = new Map<string, NodeJS.Timeout>();
  const refresh = (tenant: string, bundle: string): void => {
    const key = bundleKey(tenant, bundle);
    if (pending.has(key)) return;
    const waitMs = Math.max(0, (last.get(key) ?? -Infinity) + intervalMs - now());
    const timer = setTimeout(() => {
      pending.delete(key);
      last.set(key, now());
      shown.set(key, agents.agents(tenant, bundle, now()));
      gauges(tenant, bundle);
      o.enqueue({ kind: 'Bundle', namespace: tenant, name: bundle });
    }, waitMs);
    timer.unref();
    pending.set(key, timer);
  };
  const unsubscribeAgents = agents.onChange(refresh);

  const unsubscribeStore = store.onBundleChange((changed, snapshot) => {
    const at = now();
    for (const b of changed) {
      const current = snapshot.tenants.get(b.tenant)?.bundles.get(b.name);
      if (current) {
        agents.published(b.tenant, b.name, current.built.revision, at);
        gauges(b.tenant, b.name);
      } else {
        agents.forget(b.tenant, b.name);
        // A refresh armed before the delete would bring back its gauges and view.
        clearTimeout(pending.get(bundleKey(b.tenant, b.name)));
        pending.delete(bundleKey(b.tenant, b.name));
        recent.forget(bundleKey(b.tenant, b.name));
        last.delete(bundleKey(b.tenant, b.name));
        shown.delete(bundleKey(b.tenant, b.name));
        for (const state of STATES) metrics.agents.remove({ tenant: b.tenant, bundle: b.name, state });
      }
    }
  });
  // Silence is noticed by the clock: forgotten agents change their bundles' status too.
  const expiry = setInterval(() => agents.expire(now()), Math.min(5000, Math.max(100, windowMs / 10)));
  expiry.unref();

  return {
    agents,
    recent,
    sink,
    maxUploadBytes: o.config.maxUploadBytes,
    uploads,
    view: {
      windowSeconds: o.config.agentExpirySeconds,
      // Against the revision served now: a new revision shows its agents behind at once.
      summary: (tenant, bundle, revision) =>
        summarize(shown.get(bundleKey(tenant, bundle)) ?? [], revision === undefined ? undefined : String(revision)),
      agents: (tenant, bundle) => shown.get(bundleKey(tenant, bundle)) ?? [],
    },
    listeningSinceMs,
    async stop() {
      unsubscribeAgents();
      unsubscribeStore();
      clearInterval(expiry);
      for (const t of pending.values()) clearTimeout(t);
      pending.clear();
      await uploads.close();
      await sink.close();
    },
  };
}
