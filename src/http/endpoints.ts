// HTTP glue of the AuthZEN 1.0 API (authzen.ts): API key → tenant, JSON body, X-Request-ID, the
// reply, metrics. Served at /access/v1/... (the tenant of the API key) and at
// /{tenant}/access/v1/... (the same, for a client configured from the per-tenant metadata).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serviceDecisionLine } from '../fleet/index.ts';
import { EMPTY_DIRECTORY, type Decision, type DecisionInput } from '../policy/index.ts';
import { evaluation, evaluations, metadata, search, type Reply, type TenantView } from './authzen.ts';
import { readJsonBody } from './body.ts';
import type { ApiDeps } from './deps.ts';
import { sendError } from './errors.ts';
import type { AuthzenEndpoint } from './paths.ts';
import { requestId, sendJson, sendUnauthenticated, withRequestId } from './reply.ts';
import { createIndexLookup, createTenantResolver } from './tenant.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, pathTenant?: string) => void;

/** One handler per AuthZEN POST endpoint, sharing the tenant cache and the empty indexes. */
export function createAuthzenHandlers(deps: ApiDeps): Readonly<Record<AuthzenEndpoint, Handler>> {
  const tenantFor = createTenantResolver(deps);
  const indexOf = createIndexLookup();
  const timestamp = (): string => new Date(deps.now()).toISOString();
  const run: Readonly<Record<AuthzenEndpoint, (body: unknown, view: TenantView) => Reply>> = {
    evaluation: (body, view) => evaluation(body, view, timestamp),
    evaluations: (body, view) => evaluations(body, view, timestamp),
    search_subject: (body, view) => search('subject', body, view),
    search_resource: (body, view) => search('resource', body, view),
    search_action: (body, view) => search('action', body, view),
  };

  const allowed = deps.metrics.decisions.labels('allow');
  const denied = deps.metrics.decisions.labels('deny');
  const lines = deps.metrics.decisionLogLines.labels('service');
  const { sink } = deps.fleet;
  /** acl_decisions_total counts AuthZEN decisions too (a batch item refused as malformed is no decision). */
  const countDecisions = (body: unknown, started: number): void => {
    const one = (d: unknown): void => {
      if (typeof d !== 'object' || d === null) return;
      const { decision, context } = d as { decision?: unknown; context?: { error?: unknown } };
      if (typeof decision !== 'boolean' || context?.error !== undefined) return;
      (decision ? allowed : denied).inc();
    };
    const items = (body as { evaluations?: unknown }).evaluations;
    if (Array.isArray(items)) items.forEach(one);
    else {
      one(body);
      deps.metrics.decisionSeconds.observe((performance.now() - started) / 1000);
    }
  };

  const handler = (endpoint: AuthzenEndpoint): Handler =>
    function authzen(req, res, pathTenant) {
      const started = performance.now();
      const id = requestId(req);
      const headers = withRequestId(id);
      const count = (code: number): void => {
        deps.metrics.authzenRequests.inc({ endpoint, code: String(code) });
      };
      const tenant = tenantFor(req);
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
      readJsonBody(req, deps.maxBodyBytes, function answer(body) {
        try {
          if (!body.ok) {
            sendError(res, body.code, body.message, body.code === 'too_large' ? { ...headers, Connection: 'close' } : headers);
            count(body.code === 'too_large' ? 413 : 400);
            return;
          }
          const snapshot = deps.store.snapshot();
          const logged = sink.enabled && (endpoint === 'evaluation' || endpoint === 'evaluations');
          // One object shape whether the decision log is on or off (no spread on the decision path).
          const view: TenantView = {
            tenant,
            index: indexOf(snapshot, tenant),
            directory: snapshot.tenants.get(tenant)?.directory ?? EMPTY_DIRECTORY,
            onDecision: logged
              ? (input: DecisionInput, d: Decision) => {
                  sink.write(
                    serviceDecisionLine({
                      time: timestamp(),
                      tenant,
                      endpoint,
                      requestId: id,
                      allow: d.allow,
                      policyId: d.policyId,
                      input,
                    }),
                  );
                  lines.inc();
                }
              : undefined,
          };
          const reply = run[endpoint](body.value, view);
          if (!reply.ok) {
            sendError(res, 'bad_request', reply.message, headers);
            count(400);
            return;
          }
          sendJson(res, reply.body, headers);
          count(200);
          if (endpoint === 'evaluation' || endpoint === 'evaluations') countDecisions(reply.body, started);
          if (deps.log.isLevelEnabled('debug')) deps.log.debug({ requestId: id, tenant, endpoint }, 'Answered AuthZEN request');
        } catch (err) {
          deps.log.error({ err, method: req.method, endpoint }, 'Failed to serve request');
          sendError(res, 'internal', 'internal error', headers);
          count(500);
        }
      });
    };
  return {
    evaluation: handler('evaluation'),
    evaluations: handler('evaluations'),
    search_subject: handler('search_subject'),
    search_resource: handler('search_resource'),
    search_action: handler('search_action'),
  };
}

/** GET /.well-known/authzen-configuration[/<tenant>]: public, like any discovery document. */
export function createMetadataHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse, tenant?: string) => void {
  return function discovery(req, res, tenant) {
    const id = requestId(req);
    sendJson(res, metadata(deps.publicUrl(), tenant), withRequestId(id));
    deps.metrics.authzenRequests.inc({ endpoint: 'metadata', code: '200' });
  };
}
