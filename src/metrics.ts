// Every metric, on our own Registry, defined in one table. Labels come from small sets: decision,
// status code, kind, phase, result, and the bundles a tenant configured (never subjects, resources,
// rules or tokens), except the acl_shadow_* series: one per rule of a tenant's proposal, only while
// it is proposed (a few per tenant), read from the shadow ledger at scrape time.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ControllerMetrics, Kind } from './controller/index.ts';

/** One row of a metrics table: the prom-client type, its name, help line, labels and buckets. */
interface Row {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly string[];
}
type Definition =
  | (Row & { readonly type: 'counter' })
  | (Row & { readonly type: 'gauge' })
  | (Row & { readonly type: 'histogram'; readonly buckets: readonly number[] });

type LabelsOf<D> = D extends { readonly labelNames: readonly (infer L extends string)[] } ? L : string;

/** The prom-client metric a row defines, typed by its labels (a metric without labels takes any, as prom-client's default). */
type MetricOf<D extends Definition> = D['type'] extends 'counter'
  ? Counter<LabelsOf<D>>
  : D['type'] extends 'gauge'
    ? Gauge<LabelsOf<D>>
    : Histogram<LabelsOf<D>>;

type MetricsOf<T extends Record<string, Definition>> = { readonly [K in keyof T]: MetricOf<T[K]> };

// Registered first, so /metrics lists them before the service's own (as it always has).
const CONTROLLER = {
  reconciles: { type: 'counter', name: 'acl_reconcile_total', help: 'Reconciles by kind and result', labelNames: ['kind', 'result'] },
  reconcileSeconds: {
    type: 'histogram',
    name: 'acl_reconcile_duration_seconds',
    help: 'Time to reconcile one key',
    labelNames: ['kind', 'result'],
    buckets: [0.0001, 0.001, 0.01, 0.05, 0.1, 0.5, 1, 5],
  },
  objects: {
    type: 'gauge',
    name: 'acl_objects',
    help: 'Objects by kind and phase (Rule phases: Enforced, Invalid, Draft, ...)',
    labelNames: ['kind', 'phase'],
  },
  statusWrites: {
    type: 'counter',
    name: 'acl_status_writes_total',
    help: 'Status writes by kind (only when the status changed; only the leader writes)',
    labelNames: ['kind'],
  },
  queueDepth: { type: 'gauge', name: 'acl_queue_depth', help: 'Keys waiting to be reconciled' },
  /** Per Bundle, its RolledOut condition as status records it: 1 on the series of its status, 0 on the other two. */
  bundleRolledOut: {
    type: 'gauge',
    name: 'acl_bundle_rolled_out',
    help: 'Bundles by the status of their RolledOut condition as recorded (1 for the True, False or Unknown it has, 0 for the others)',
    labelNames: ['tenant', 'bundle', 'status'],
  },
} as const satisfies Record<string, Definition>;

const SERVICE = {
  decisions: { type: 'counter', name: 'acl_decisions_total', help: 'Decisions by outcome', labelNames: ['decision'] },
  decisionSeconds: {
    type: 'histogram',
    name: 'acl_decision_duration_seconds',
    help: 'Time from request received to decision sent',
    buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
  },
  bundleRequests: { type: 'counter', name: 'acl_bundle_requests_total', help: 'Bundle requests by HTTP status code', labelNames: ['code'] },
  /** Bundle requests left out of sync activity: they did not authenticate as the bundle's connector. */
  bundleRequestsUnrecorded: {
    type: 'counter',
    name: 'acl_bundle_requests_unrecorded_total',
    help: "Bundle requests not recorded in sync activity (not authenticated as the bundle's connector), by HTTP status code",
    labelNames: ['code'],
  },
  /** AuthZEN requests by endpoint (evaluation, evaluations, search_subject, ..., metadata) and status code. */
  authzenRequests: {
    type: 'counter',
    name: 'acl_authzen_requests_total',
    help: 'AuthZEN API requests by endpoint and HTTP status code',
    labelNames: ['endpoint', 'code'],
  },
  bundleRevision: { type: 'gauge', name: 'acl_bundle_revision', help: 'Revision served per bundle', labelNames: ['tenant', 'bundle'] },
  bundleBytes: {
    type: 'gauge',
    name: 'acl_bundle_size_bytes',
    help: 'Size of the served tar.gz per bundle',
    labelNames: ['tenant', 'bundle'],
  },
  longPolls: { type: 'gauge', name: 'acl_long_polls_held', help: 'Bundle requests held open waiting for a change' },
  /** Kubernetes mode: 1 while this replica holds the Lease. */
  leader: { type: 'gauge', name: 'acl_leader', help: 'Kubernetes mode: 1 while this replica is the leader (writes Secrets and status)' },
  /** Kubernetes mode: full lists by feed: one at start, one after each 410 Gone. */
  watchLists: {
    type: 'counter',
    name: 'acl_watch_lists_total',
    help: 'Kubernetes mode: full lists by feed (one at start, then one after each 410 Gone)',
    labelNames: ['feed'],
  },
  /** Kubernetes mode: watches restarted after an error, by feed (`Rule`, `Secret (tokens)`, ...). */
  watchRestarts: {
    type: 'counter',
    name: 'acl_watch_restarts_total',
    help: 'Kubernetes mode: watches restarted after an error, by feed',
    labelNames: ['feed'],
  },
  /** Admission webhook reviews by result: allowed, denied (an invalid object), malformed (a 4xx: no review), error (a 500). */
  admissionReviews: {
    type: 'counter',
    name: 'acl_admission_reviews_total',
    help: 'Admission webhook reviews by result (allowed, denied, malformed: answered 4xx, error: answered 500)',
    labelNames: ['result'],
  },
  /** OPA status reports by outcome (accepted, bad_request, unauthenticated, forbidden, not_found, too_large, unavailable). */
  agentReports: { type: 'counter', name: 'acl_agent_status_reports_total', help: 'OPA status reports by outcome', labelNames: ['outcome'] },
  /** OPA decision-log uploads by outcome (the same set). */
  decisionLogUploads: {
    type: 'counter',
    name: 'acl_decision_log_uploads_total',
    help: 'OPA decision-log uploads by outcome',
    labelNames: ['outcome'],
  },
  /** Status reports and decision-log uploads refused at the connector token, so recording nothing: by endpoint (status, logs) and status code. */
  agentUploadsUnrecorded: {
    type: 'counter',
    name: 'acl_agent_uploads_unrecorded_total',
    help: "OPA status reports and decision-log uploads refused at the connector token (not the connector's current one, or an Inactive connector's decision logs), so not recorded, by endpoint and HTTP status code",
    labelNames: ['endpoint', 'code'],
  },
  /** Times the uploads thread stopped under an upload (a body past its memory limit): it starts again with the next. */
  uploadThreadStops: {
    type: 'counter',
    name: 'acl_upload_thread_stops_total',
    help: 'Times the thread reading OPA uploads stopped under an upload (it starts again with the next)',
  },
  /** Decisions OPA agents reported, by tenant, bundle and result (allow, deny, error, undefined, other). */
  agentDecisions: {
    type: 'counter',
    name: 'acl_agent_decisions_total',
    help: 'Decisions OPA agents reported, by tenant, bundle and result',
    labelNames: ['tenant', 'bundle', 'result'],
  },
  /** Agents heard from within the window, per bundle and state (current, behind, failing). */
  agents: {
    type: 'gauge',
    name: 'acl_agents',
    help: 'OPA agents heard from within --agent-expiry-seconds, by bundle and state (current, behind, failing)',
    labelNames: ['tenant', 'bundle', 'state'],
  },
  /** Seconds from a bundle revision's publication to an agent reporting it active. */
  propagationSeconds: {
    type: 'histogram',
    name: 'acl_bundle_propagation_seconds',
    help: 'From a bundle revision published to an agent reporting it active',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
  },
  /** Agents dropped because --max-agents was reached. */
  agentsEvicted: { type: 'counter', name: 'acl_agents_evicted_total', help: 'Agents dropped because --max-agents was reached' },
  /** Lines written to the decision log, by source (service, opa). */
  decisionLogLines: {
    type: 'counter',
    name: 'acl_decision_log_lines_total',
    help: 'Lines written to the decision log, by source (service, opa)',
    labelNames: ['source'],
  },
  /** Lines the decision log dropped because its backlog was full (the disk or stdout fell behind). */
  decisionLogDropped: {
    type: 'counter',
    name: 'acl_decision_log_dropped_total',
    help: 'Decision log lines dropped because the backlog was full',
  },
  /** Shadow decisions the ledger failed to count (a bug, logged once per kind; the decision was answered). */
  shadowFailures: {
    type: 'counter',
    name: 'acl_shadow_failures_total',
    help: 'Shadow decisions that failed to be counted (the live decision was answered unchanged)',
  },
} as const satisfies Record<string, Definition>;

/** One rule's shadow counts as metrics read them (shadow/ledger.ts's tallies). */
export interface ShadowCounts {
  readonly tenant: string;
  readonly rule: string;
  readonly tally: { readonly role: string; readonly evaluated: number; readonly matched: number; readonly flips: number };
}

const SHADOW_LABELS = ['tenant', 'rule', 'role'] as const;
// Per rule of a proposal, read from the ledger at scrape time: the decision path touches no label.
// A rule's series start again with a spec edit or a role change, and go when it leaves the proposal.
const SHADOW: readonly { readonly name: string; readonly help: string; readonly field: 'evaluated' | 'matched' | 'flips' }[] = [
  {
    name: 'acl_shadow_evaluated_total',
    help: 'Live decisions a Proposed rule (or one marked for removal) covered, by tenant, rule and role, for its current spec',
    field: 'evaluated',
  },
  { name: 'acl_shadow_matched_total', help: 'Of those, the decisions its condition was true for', field: 'matched' },
  {
    name: 'acl_shadow_flips_total',
    help: 'Of those, the decisions it would have changed: deny to allow (Proposed) or allow to deny (Removal)',
    field: 'flips',
  },
];

export interface Metrics extends MetricsOf<typeof SERVICE> {
  readonly registry: Registry;
  readonly controller: ControllerMetrics;
  /** Where the acl_shadow_* series are read from at each scrape (the process's shadow ledger). */
  shadowFrom(source: () => Iterable<ShadowCounts>): void;
}

/** Outcomes of an OPA upload (status report or decision log); unavailable: 503, too many held at once. */
export type UploadOutcome = 'accepted' | 'bad_request' | 'unauthenticated' | 'forbidden' | 'not_found' | 'too_large' | 'unavailable';

function create(d: Definition, registry: Registry): Counter | Gauge | Histogram {
  const common = { name: d.name, help: d.help, labelNames: d.labelNames ?? [], registers: [registry] };
  if (d.type === 'counter') return new Counter(common);
  if (d.type === 'gauge') return new Gauge(common);
  return new Histogram({ ...common, buckets: [...d.buckets] });
}

/** Registers every row of a table, in the table's order, and returns the metrics by the row's key. */
function register<T extends Record<string, Definition>>(table: T, registry: Registry): MetricsOf<T> {
  // Each row's type and labels decide its metric's type; Object.fromEntries cannot carry that, hence the cast.
  return Object.fromEntries(Object.entries(table).map(([key, d]) => [key, create(d, registry)])) as MetricsOf<T>;
}

const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

/** The controller's view of its metrics; phases it saw once stay listed, at 0, so a dashboard sees them drain. */
function controllerMetrics(m: MetricsOf<typeof CONTROLLER>): ControllerMetrics {
  const phaseNames = new Map<Kind, Set<string>>();
  return {
    reconciled(kind, result, seconds) {
      m.reconciles.inc({ kind, result });
      m.reconcileSeconds.observe({ kind, result }, seconds);
    },
    phases(kind, counts) {
      const names = phaseNames.get(kind) ?? new Set<string>();
      phaseNames.set(kind, names);
      for (const p of counts.keys()) names.add(p);
      for (const p of names) m.objects.set({ kind, phase: p }, counts.get(p) ?? 0);
    },
    queueDepth(depth) {
      m.queueDepth.set(depth);
    },
    statusWritten(kind) {
      m.statusWrites.inc({ kind });
    },
    rolledOut(tenant, bundle, status) {
      for (const s of CONDITION_STATUSES) {
        if (status === undefined) m.bundleRolledOut.remove({ tenant, bundle, status: s });
        else m.bundleRolledOut.set({ tenant, bundle, status: s }, s === status ? 1 : 0);
      }
    },
  };
}

/** A fresh Registry with every metric of the tables on it (and Node's default metrics unless turned off). */
export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'acl_' });
  const controller = controllerMetrics(register(CONTROLLER, registry));
  const service = register(SERVICE, registry);
  let shadowSource: () => Iterable<ShadowCounts> = () => [];
  for (const { name, help, field } of SHADOW) {
    new Counter({
      name,
      help,
      labelNames: SHADOW_LABELS,
      registers: [registry],
      collect(this: Counter<(typeof SHADOW_LABELS)[number]>) {
        this.reset();
        for (const { tenant, rule, tally } of shadowSource()) this.inc({ tenant, rule, role: tally.role }, tally[field]);
      },
    });
  }
  return {
    registry,
    ...service,
    controller,
    shadowFrom(source) {
      shadowSource = source;
    },
  };
}
