// POST /authorization (service spec 2.1, 2.2, 4.1, 5.1, 7.1): API key → tenant, body → decision.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hashToken, parseBearer } from '../auth/index.ts';
import { serviceDecisionLine } from '../fleet/index.ts';
import { buildIndex, decide, EMPTY_DIRECTORY, type CompiledRule, type Decision, type RuleIndex } from '../policy/index.ts';
import type { Snapshot } from '../store/index.ts';
import { readJsonBody, type BodyResult } from './body.ts';
import { sendError, WWW_AUTHENTICATE } from './errors.ts';
import { decisionInputOf } from './request.ts';
import type { ApiDeps } from './deps.ts';

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

/** The request's X-Request-ID when it is printable and short (echoed as it came), else undefined. */
export function requestId(req: IncomingMessage): string | undefined {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : undefined;
}

/** The tenant of a request's API key, or undefined. */
export function tenantOf(snapshot: Snapshot, authorization: string | undefined): string | undefined {
  const key = parseBearer(authorization);
  return key === undefined ? undefined : snapshot.apiKeys.get(hashToken(key))?.tenant;
}

// No Cache-Control: a POST reply is not stored by caches unless it says so (RFC 9111 3), and every
// header is paid for on every decision.
function replyHeaders(payload: string): Record<string, string | number> {
  return { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(payload) };
}

/**
 * The tenant of a request's API key. A keep-alive connection presents the same key on every
 * request: it remembers the header it last presented and the tenant it was worth, for the key set
 * it was checked against. The store still holds only hashes; the header string lives as long as
 * the connection (as Node's parser's copy does).
 */
export function createTenantResolver(deps: Pick<ApiDeps, 'store'>): (req: IncomingMessage) => string | undefined {
  const known = new WeakMap<object, { readonly header: string; readonly keys: object; readonly tenant: string }>();
  return function tenantFor(req) {
    const header = req.headers.authorization;
    if (header === undefined) return undefined;
    const keys = deps.store.snapshot().apiKeys;
    const last = known.get(req.socket);
    if (last !== undefined && last.keys === keys && last.header === header) return last.tenant;
    const tenant = tenantOf(deps.store.snapshot(), header);
    if (tenant !== undefined) known.set(req.socket, { header, keys, tenant });
    return tenant;
  };
}

/** The 401 of a request without a valid API key. */
export function sendUnauthenticated(req: IncomingMessage, res: ServerResponse, id: string | undefined): void {
  req.resume();
  const message = req.headers.authorization ? 'the API key is not valid' : 'an API key is required: Authorization: Bearer <key>';
  sendError(res, 'unauthenticated', message, { ...(id === undefined ? {} : { 'X-Request-ID': id }), 'WWW-Authenticate': WWW_AUTHENTICATE });
}

/** A tenant's rule index; an empty one (kept per tenant) for a tenant without rules. */
export function createIndexLookup(): (snapshot: Snapshot, tenant: string) => RuleIndex {
  const emptyIndexes = new Map<string, RuleIndex>();
  return (snapshot, tenant) => {
    const index = snapshot.tenants.get(tenant)?.index;
    if (index) return index;
    let empty = emptyIndexes.get(tenant);
    if (!empty) {
      empty = buildIndex(tenant, []);
      emptyIndexes.set(tenant, empty);
    }
    return empty;
  };
}

export function createAuthorizationHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const indexOf = createIndexLookup();
  const tenantFor = createTenantResolver(deps);
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
    const headers: Record<string, string> = id === undefined ? {} : { 'X-Request-ID': id };
    if (!body.ok) {
      sendError(res, body.code, body.message, body.code === 'too_large' ? { ...headers, Connection: 'close' } : headers);
      return;
    }
    const mapped = decisionInputOf(body.value);
    if (!mapped.ok) {
      sendError(res, 'bad_request', mapped.message, headers);
      return;
    }
    const snapshot = deps.store.snapshot();
    const decision = decide(indexOf(snapshot, tenant), mapped.input, snapshot.tenants.get(tenant)?.directory ?? EMPTY_DIRECTORY);
    const timestamp = isoTime(deps.now());
    const payload = decision.allow
      ? `{"decision":"allow","timestamp":"${timestamp}",${allowTail(decision.rule, decision)}}`
      : `{"decision":"deny","timestamp":"${timestamp}","policyId":${JSON.stringify(decision.policyId)},"reasons":${JSON.stringify(decision.reasons)}}`;
    res.writeHead(200, id === undefined ? replyHeaders(payload) : { ...replyHeaders(payload), 'X-Request-ID': id });
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
  }

  return function authorize(req, res) {
    const started = performance.now();
    const id = requestId(req);
    const tenant = tenantFor(req);
    if (tenant === undefined) {
      sendUnauthenticated(req, res, id);
      return;
    }
    // Called from a stream event, where a throw would end the process: a bug becomes a 500 here.
    readJsonBody(req, deps.maxBodyBytes, function decideBody(body) {
      try {
        answer(res, tenant, id, started, body);
      } catch (err) {
        deps.log.error({ err, method: req.method, path: '/authorization' }, 'Failed to serve request');
        sendError(res, 'internal', 'internal error');
      }
    });
  };
}
