// Every metric, on our own Registry. Labels come from small sets: decision, status code, kind,
// phase, result, and the bundles a tenant configured (never subjects, resources, rules or tokens).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ControllerMetrics, Kind } from './controller/index.ts';

export interface Metrics {
  readonly registry: Registry;
  readonly decisions: Counter<'decision'>;
  readonly decisionSeconds: Histogram;
  readonly bundleRequests: Counter<'code'>;
  /** Bundle requests left out of sync activity: they did not authenticate as the bundle's connector. */
  readonly bundleRequestsUnrecorded: Counter<'code'>;
  /** AuthZEN requests by endpoint (evaluation, evaluations, search_subject, ..., metadata) and status code. */
  readonly authzenRequests: Counter<'endpoint' | 'code'>;
  readonly bundleRevision: Gauge<'tenant' | 'bundle'>;
  readonly bundleBytes: Gauge<'tenant' | 'bundle'>;
  readonly longPolls: Gauge;
  /** Kubernetes mode: 1 while this replica holds the Lease. */
  readonly leader: Gauge;
  /** Kubernetes mode: watches restarted after an error, by feed (`Rule`, `Secret (tokens)`, ...). */
  readonly watchRestarts: Counter<'feed'>;
  /** Kubernetes mode: full lists by feed: one at start, one after each 410 Gone. */
  readonly watchLists: Counter<'feed'>;
  readonly controller: ControllerMetrics;
  /** OPA status reports by outcome (accepted, bad_request, unauthenticated, forbidden, not_found, too_large). */
  readonly agentReports: Counter<'outcome'>;
  /** OPA decision-log uploads by outcome (the same set). */
  readonly decisionLogUploads: Counter<'outcome'>;
  /** Decisions OPA agents reported, by tenant, bundle and result (allow, deny, error, undefined, other). */
  readonly agentDecisions: Counter<'tenant' | 'bundle' | 'result'>;
  /** Agents heard from within the window, per bundle and state (current, behind, failing). */
  readonly agents: Gauge<'tenant' | 'bundle' | 'state'>;
  /** Seconds from a bundle revision's publication to an agent reporting it active. */
  readonly propagationSeconds: Histogram;
  /** Agents dropped because --max-agents was reached. */
  readonly agentsEvicted: Counter;
  /** Lines written to the decision log, by source (service, opa). */
  readonly decisionLogLines: Counter<'source'>;
  /** Lines the decision log dropped because its backlog was full (the disk or stdout fell behind). */
  readonly decisionLogDropped: Counter;
}

/** Outcomes of an OPA upload (status report or decision log). */
export type UploadOutcome = 'accepted' | 'bad_request' | 'unauthenticated' | 'forbidden' | 'not_found' | 'too_large';

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'acl_' });
  const reconciles = new Counter({
    name: 'acl_reconcile_total',
    help: 'Reconciles by kind and result',
    labelNames: ['kind', 'result'] as const,
    registers,
  });
  const reconcileSeconds = new Histogram({
    name: 'acl_reconcile_duration_seconds',
    help: 'Time to reconcile one key',
    labelNames: ['kind', 'result'] as const,
    registers,
    buckets: [0.0001, 0.001, 0.01, 0.05, 0.1, 0.5, 1, 5],
  });
  const objects = new Gauge({
    name: 'acl_objects',
    help: 'Objects by kind and phase (Rule phases: Enforced, Invalid, Draft, ...)',
    labelNames: ['kind', 'phase'] as const,
    registers,
  });
  const statusWrites = new Counter({
    name: 'acl_status_writes_total',
    help: 'Status writes by kind (only when the status changed; only the leader writes)',
    labelNames: ['kind'] as const,
    registers,
  });
  const queueDepth = new Gauge({ name: 'acl_queue_depth', help: 'Keys waiting to be reconciled', registers });
  const phaseNames = new Map<Kind, Set<string>>();
  return {
    registry,
    decisions: new Counter({ name: 'acl_decisions_total', help: 'Decisions by outcome', labelNames: ['decision'] as const, registers }),
    decisionSeconds: new Histogram({
      name: 'acl_decision_duration_seconds',
      help: 'Time from request received to decision sent',
      registers,
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
    }),
    bundleRequests: new Counter({
      name: 'acl_bundle_requests_total',
      help: 'Bundle requests by HTTP status code',
      labelNames: ['code'] as const,
      registers,
    }),
    bundleRequestsUnrecorded: new Counter({
      name: 'acl_bundle_requests_unrecorded_total',
      help: "Bundle requests not recorded in sync activity (not authenticated as the bundle's connector), by HTTP status code",
      labelNames: ['code'] as const,
      registers,
    }),
    authzenRequests: new Counter({
      name: 'acl_authzen_requests_total',
      help: 'AuthZEN API requests by endpoint and HTTP status code',
      labelNames: ['endpoint', 'code'] as const,
      registers,
    }),
    bundleRevision: new Gauge({
      name: 'acl_bundle_revision',
      help: 'Revision served per bundle',
      labelNames: ['tenant', 'bundle'] as const,
      registers,
    }),
    bundleBytes: new Gauge({
      name: 'acl_bundle_size_bytes',
      help: 'Size of the served tar.gz per bundle',
      labelNames: ['tenant', 'bundle'] as const,
      registers,
    }),
    longPolls: new Gauge({ name: 'acl_long_polls_held', help: 'Bundle requests held open waiting for a change', registers }),
    leader: new Gauge({
      name: 'acl_leader',
      help: 'Kubernetes mode: 1 while this replica is the leader (writes Secrets and status)',
      registers,
    }),
    watchLists: new Counter({
      name: 'acl_watch_lists_total',
      help: 'Kubernetes mode: full lists by feed (one at start, then one after each 410 Gone)',
      labelNames: ['feed'] as const,
      registers,
    }),
    watchRestarts: new Counter({
      name: 'acl_watch_restarts_total',
      help: 'Kubernetes mode: watches restarted after an error, by feed',
      labelNames: ['feed'] as const,
      registers,
    }),
    agentReports: new Counter({
      name: 'acl_agent_status_reports_total',
      help: 'OPA status reports by outcome',
      labelNames: ['outcome'] as const,
      registers,
    }),
    decisionLogUploads: new Counter({
      name: 'acl_decision_log_uploads_total',
      help: 'OPA decision-log uploads by outcome',
      labelNames: ['outcome'] as const,
      registers,
    }),
    agentDecisions: new Counter({
      name: 'acl_agent_decisions_total',
      help: 'Decisions OPA agents reported, by tenant, bundle and result',
      labelNames: ['tenant', 'bundle', 'result'] as const,
      registers,
    }),
    agents: new Gauge({
      name: 'acl_agents',
      help: 'OPA agents heard from within --agent-expiry-seconds, by bundle and state (current, behind, failing)',
      labelNames: ['tenant', 'bundle', 'state'] as const,
      registers,
    }),
    propagationSeconds: new Histogram({
      name: 'acl_bundle_propagation_seconds',
      help: 'From a bundle revision published to an agent reporting it active',
      registers,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    }),
    agentsEvicted: new Counter({ name: 'acl_agents_evicted_total', help: 'Agents dropped because --max-agents was reached', registers }),
    decisionLogLines: new Counter({
      name: 'acl_decision_log_lines_total',
      help: 'Lines written to the decision log, by source (service, opa)',
      labelNames: ['source'] as const,
      registers,
    }),
    decisionLogDropped: new Counter({
      name: 'acl_decision_log_dropped_total',
      help: 'Decision log lines dropped because the backlog was full',
      registers,
    }),
    controller: {
      reconciled(kind, result, seconds) {
        reconciles.inc({ kind, result });
        reconcileSeconds.observe({ kind, result }, seconds);
      },
      phases(kind, counts) {
        const names = phaseNames.get(kind) ?? new Set<string>();
        phaseNames.set(kind, names);
        for (const p of counts.keys()) names.add(p);
        for (const p of names) objects.set({ kind, phase: p }, counts.get(p) ?? 0);
      },
      queueDepth(depth) {
        queueDepth.set(depth);
      },
      statusWritten(kind) {
        statusWrites.inc({ kind });
      },
    },
  };
}
