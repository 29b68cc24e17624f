// POST /authorization (service spec 2.1, 2.2, 4.1, 5.1, 7.1): API key → tenant, body → decision.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serviceDecisionLine } from '../fleet/index.ts';
import { decide, EMPTY_DIRECTORY, type CompiledRule, type Decision } from '../policy/index.ts';
import { readJsonBody, type BodyResult } from './body.ts';
import type { ApiDeps } from './deps.ts';
import { sendError } from './errors.ts';
import { answerThrow, type ThrowSite } from './guard.ts';
import { createShadowObserver } from './shadow.ts';
import { jsonHeaders, requestId, sendUnauthenticated, withRequestId } from './reply.ts';
import { decisionInputOf } from '../authzen/index.ts';
import { createIndexLookup, createTenantResolver } from './tenant.ts';

/** The POST /authorization handler: 401 without a tenant's API key, else the body's decision (or its 400/413). */
export function createAuthorizationHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const indexOf = createIndexLookup();
  const tenantFor = createTenantResolver(deps);
  const site: ThrowSite = { log: deps.log, fields: (req) => ({ method: req.method, path: '/authorization' }) };
  // The allow half of a reply never changes for a rule, so it is serialised once per rule.
  const allowTails = new WeakMap<CompiledRule, string>();
  const allowTail = (rule: CompiledRule | undefined, d: Decision): string => {
    const fresh = (): string => `"policyId":${JSON.stringify(d.policyId)},"reasons":${JSON.stringify(d.reasons)}`;
    if (rule === undefined) return fresh();
    let t = allowTails.get(rule);
    if (t === undefined) {
      t = fresh();
      allowTails.set(rule, t);
    }
    return t;
  };

  // Label children bound once: no label hashing per request.
  const allowed = deps.metrics.decisions.labels('allow');
  const denied = deps.metrics.decisions.labels('deny');
  const lines = deps.metrics.decisionLogLines.labels('service');
  const { sink } = deps.fleet;
  const observeShadow = createShadowObserver(deps);

  // Many decisions share a millisecond under load: its ISO 8601 text is made once.
  let lastMs = Number.NaN;
  let lastIso = '';
  const isoTime = (ms: number): string => {
    if (ms !== lastMs) {
      lastMs = ms;
      lastIso = new Date(ms).toISOString();
    }
    return lastIso;
  };

  /** The decision (or the 400/413) for a body that has been read. */
  function answer(res: ServerResponse, tenant: string, id: string | undefined, started: number, body: BodyResult): void {
    if (!body.ok) {
      const headers = withRequestId(id);
      sendError(res, body.code, body.message, body.code === 'too_large' ? { ...headers, Connection: 'close' } : headers);
      return;
    }
    const mapped = decisionInputOf(body.value);
    if (!mapped.ok) {
      sendError(res, 'bad_request', mapped.message, withRequestId(id));
      return;
    }
    const snapshot = deps.store.snapshot();
    const served = snapshot.tenants.get(tenant);
    const decision = decide(indexOf(snapshot, tenant), mapped.input, served?.directory ?? EMPTY_DIRECTORY);
    const timestamp = isoTime(deps.now());
    const payload = decision.allow
      ? `{"decision":"allow","timestamp":"${timestamp}",${allowTail(decision.rule, decision)}}`
      : `{"decision":"deny","timestamp":"${timestamp}","policyId":${JSON.stringify(decision.policyId)},"reasons":${JSON.stringify(decision.reasons)}}`;
    res.writeHead(200, id === undefined ? jsonHeaders(payload) : { ...jsonHeaders(payload), 'X-Request-ID': id });
    res.end(payload);
    (decision.allow ? allowed : denied).inc();
    if (sink.enabled) {
      sink.write(
        serviceDecisionLine({
          time: timestamp,
          tenant,
          endpoint: 'authorization',
          requestId: id,
          allow: decision.allow,
          policyId: decision.policyId,
          input: mapped.input,
        }),
      );
      lines.inc();
    }
    deps.metrics.decisionSeconds.observe((performance.now() - started) / 1000);
    if (deps.log.isLevelEnabled('debug'))
      deps.log.debug({ requestId: id, tenant, decision: decision.allow ? 'allow' : 'deny', policyId: decision.policyId }, 'Decided');
    // Last, once the answer is on its way: a tenant without a proposal pays this one read.
    if (served?.shadow !== undefined) observeShadow(tenant, served.shadow, served.index, mapped.input, served.directory, decision);
  }

  return function authorize(req, res) {
    const started = performance.now();
    const id = requestId(req);
    const tenant = tenantFor(req);
    if (tenant === undefined) {
      sendUnauthenticated(req, res, id);
      return;
    }
    // Called from a stream event, where a throw would end the process. The guard is written inline
    // rather than through guarded(): one closure less per decision.
    readJsonBody(req, deps.maxBodyBytes, function decideBody(body: BodyResult) {
      try {
        answer(res, tenant, id, started, body);
      } catch (err) {
        answerThrow(site, req, res, err);
      }
    });
  };
}
