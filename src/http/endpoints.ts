// HTTP glue of the AuthZEN 1.0 API (authzen.ts): API key → tenant, JSON body, X-Request-ID, the
// reply, metrics. Served at /access/v1/... (the tenant of the API key) and at
// /{tenant}/access/v1/... (the same, for a client configured from the per-tenant metadata).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Counter } from 'prom-client';
import { serviceDecisionLine } from '../fleet/index.ts';
import { EMPTY_DIRECTORY, type Decision, type DecisionInput, type RuleIndex } from '../policy/index.ts';
import type { Snapshot, TenantSnapshot } from '../store/index.ts';
import { createShadowObserver, type ShadowObserve } from './shadow.ts';
import { evaluation, evaluations, metadata, search, type AuthzenEndpoint, type Reply, type TenantView } from '../authzen/index.ts';
import { readJsonBody, type BodyResult } from './body.ts';
import type { ApiDeps } from './deps.ts';
import { sendError } from './errors.ts';
import { answerThrow, type ThrowSite } from './guard.ts';
import { requestId, sendJson, sendUnauthenticated, withRequestId } from './reply.ts';
import { createIndexLookup, createTenantResolver } from './tenant.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, pathTenant?: string) => void;

/** What every AuthZEN handler shares: the tenant cache, the empty indexes, the counters bound once. */
interface AuthzenState {
  readonly deps: ApiDeps;
  readonly tenantFor: (req: IncomingMessage) => string | undefined;
  readonly indexOf: (snapshot: Snapshot, tenant: string) => RuleIndex;
  readonly timestamp: () => string;
  readonly allowed: Counter.Internal;
  readonly denied: Counter.Internal;
  readonly lines: Counter.Internal;
  readonly observeShadow: ShadowObserve;
}

/** The decisions of one request, kept for the shadow ledger until its answer was sent. */
interface Decided {
  readonly inputs: DecisionInput[];
  readonly decisions: Decision[];
}

/** One request of a tenant whose body is being read. */
interface Asked {
  readonly endpoint: AuthzenEndpoint;
  readonly tenant: string;
  readonly id: string | undefined;
  readonly headers: Record<string, string>;
  /** performance.now() when it arrived (acl_decision_seconds). */
  readonly started: number;
  /** Counts the answer by status (acl_authzen_requests_total). */
  readonly count: (code: number) => void;
}

/** How each endpoint answers a parsed body. */
const RUN: Readonly<Record<AuthzenEndpoint, (body: unknown, view: TenantView, timestamp: () => string) => Reply>> = {
  evaluation,
  evaluations,
  search_subject: (body, view) => search('subject', body, view),
  search_resource: (body, view) => search('resource', body, view),
  search_action: (body, view) => search('action', body, view),
};

/** Evaluations make decisions (counted and logged); searches do not. */
function decides(endpoint: AuthzenEndpoint): endpoint is 'evaluation' | 'evaluations' {
  return endpoint === 'evaluation' || endpoint === 'evaluations';
}

/** acl_decisions_total counts AuthZEN decisions too (a batch item refused as malformed is no decision). */
function countDecisions(state: AuthzenState, body: unknown, started: number): void {
  const items = (body as { evaluations?: unknown }).evaluations;
  if (Array.isArray(items)) for (const d of items) countDecision(state, d);
  else {
    countDecision(state, body);
    state.deps.metrics.decisionSeconds.observe((performance.now() - started) / 1000);
  }
}

/** Counts one evaluation's answer in acl_decisions_total (not one refused as malformed). */
function countDecision(state: AuthzenState, d: unknown): void {
  if (typeof d !== 'object' || d === null) return;
  const { decision, context } = d as { decision?: unknown; context?: { error?: unknown } };
  if (typeof decision !== 'boolean' || context?.error !== undefined) return;
  (decision ? state.allowed : state.denied).inc();
}

/**
 * The tenant's view of a snapshot, telling the decision log of each decision when it is on, and
 * keeping each in `decided` when the tenant has a proposal.
 */
function viewOf(
  state: AuthzenState,
  asked: Asked,
  snapshot: Snapshot,
  served: TenantSnapshot | undefined,
  decided: Decided | undefined,
): TenantView {
  const { sink } = state.deps.fleet;
  const { tenant, endpoint } = asked;
  const logged = sink.enabled && decides(endpoint);
  // One object shape whether the decision log is on or off (no spread on the decision path).
  return {
    tenant,
    index: state.indexOf(snapshot, tenant),
    directory: served?.directory ?? EMPTY_DIRECTORY,
    onDecision:
      logged || decided !== undefined
        ? (input: DecisionInput, d: Decision) => {
            if (decided !== undefined) {
              decided.inputs.push(input);
              decided.decisions.push(d);
            }
            if (!logged) return;
            sink.write(
              serviceDecisionLine({
                time: state.timestamp(),
                tenant,
                endpoint,
                requestId: asked.id,
                allow: d.allow,
                policyId: d.policyId,
                input,
              }),
            );
            state.lines.inc();
          }
        : undefined,
  };
}

/** Answers a request whose body has been read: the 400/413 of the body, or the endpoint's reply. */
function answer(state: AuthzenState, asked: Asked, res: ServerResponse, body: BodyResult): void {
  const { headers, count } = asked;
  if (!body.ok) {
    sendError(res, body.code, body.message, body.code === 'too_large' ? { ...headers, Connection: 'close' } : headers);
    count(body.code === 'too_large' ? 413 : 400);
    return;
  }
  const snapshot = state.deps.store.snapshot();
  const served = snapshot.tenants.get(asked.tenant);
  // Searches are not decisions: only evaluations are shadow-decided. Without a proposal, one read.
  const decided: Decided | undefined = served?.shadow !== undefined && decides(asked.endpoint) ? { inputs: [], decisions: [] } : undefined;
  const reply = RUN[asked.endpoint](body.value, viewOf(state, asked, snapshot, served, decided), state.timestamp);
  if (!reply.ok) {
    sendError(res, 'bad_request', reply.message, headers);
    count(400);
    return;
  }
  sendJson(res, reply.body, headers);
  count(200);
  if (decides(asked.endpoint)) countDecisions(state, reply.body, asked.started);
  if (state.deps.log.isLevelEnabled('debug'))
    state.deps.log.debug({ requestId: asked.id, tenant: asked.tenant, endpoint: asked.endpoint }, 'Answered AuthZEN request');
  // Last, once the answer is on its way.
  if (decided !== undefined && served?.shadow !== undefined) {
    for (let i = 0; i < decided.inputs.length; i++)
      state.observeShadow(
        asked.tenant,
        served.shadow,
        served.index,
        decided.inputs[i] as DecisionInput,
        served.directory,
        decided.decisions[i] as Decision,
      );
  }
}

/** The handler of one endpoint: 401 before 403 (another tenant's path) before reading the body. */
function createHandler(state: AuthzenState, endpoint: AuthzenEndpoint): Handler {
  const { deps } = state;
  const site: ThrowSite = {
    log: deps.log,
    fields: (req) => ({ method: req.method, endpoint }),
    answered: () => deps.metrics.authzenRequests.inc({ endpoint, code: '500' }),
  };
  // Bound once per endpoint: the 200 is counted on every evaluation; no closure or label object per request.
  const answered200 = deps.metrics.authzenRequests.labels(endpoint, '200');
  const count = (code: number): void => {
    if (code === 200) answered200.inc();
    else deps.metrics.authzenRequests.inc({ endpoint, code: String(code) });
  };
  return function authzen(req, res, pathTenant) {
    const started = performance.now();
    const id = requestId(req);
    const headers = withRequestId(id);
    const tenant = state.tenantFor(req);
    if (tenant === undefined) {
      sendUnauthenticated(req, res, id);
      count(401);
      return;
    }
    if (pathTenant !== undefined && pathTenant !== tenant) {
      req.resume();
      sendError(res, 'forbidden', `this API key belongs to another tenant than ${JSON.stringify(pathTenant.slice(0, 63))}`, headers);
      count(403);
      return;
    }
    const asked: Asked = { endpoint, tenant, id, headers, started, count };
    readJsonBody(
      req,
      deps.maxBodyBytes,
      // Inline rather than through guarded(): one closure less per decision.
      function answerBody(body: BodyResult) {
        try {
          answer(state, asked, res, body);
        } catch (err) {
          answerThrow(site, req, res, err);
        }
      },
    );
  };
}

/** One handler per AuthZEN POST endpoint, sharing the tenant cache and the empty indexes. */
export function createAuthzenHandlers(deps: ApiDeps): Readonly<Record<AuthzenEndpoint, Handler>> {
  const state: AuthzenState = {
    deps,
    tenantFor: createTenantResolver(deps),
    indexOf: createIndexLookup(),
    timestamp: () => new Date(deps.now()).toISOString(),
    allowed: deps.metrics.decisions.labels('allow'),
    denied: deps.metrics.decisions.labels('deny'),
    lines: deps.metrics.decisionLogLines.labels('service'),
    observeShadow: createShadowObserver(deps),
  };
  return {
    evaluation: createHandler(state, 'evaluation'),
    evaluations: createHandler(state, 'evaluations'),
    search_subject: createHandler(state, 'search_subject'),
    search_resource: createHandler(state, 'search_resource'),
    search_action: createHandler(state, 'search_action'),
  };
}

/** GET /.well-known/authzen-configuration[/<tenant>]: public, like any discovery document. */
export function createMetadataHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse, tenant?: string) => void {
  return function discovery(req, res, tenant) {
    sendJson(res, metadata(deps.publicUrl(), tenant), withRequestId(requestId(req)));
    deps.metrics.authzenRequests.inc({ endpoint: 'metadata', code: '200' });
  };
}
