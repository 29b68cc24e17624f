// POST /{tenant}/connectors/policyagent/{connector}/logs (docs/opa.md): OPA's decision-log
// uploads, with the connector token checked exactly as the bundle route checks it (connector.ts).
// Decisions are audit data: only a valid token of an Active connector adds any, every number is
// kept as OPA sent it, and an upload is applied whole or not at all.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import {
  agentDecisionLine,
  parseDecisionEvents,
  parseDecisionUpload,
  parseLosslessJson,
  type DecisionEvent,
  type DecisionResult,
} from '../fleet/index.ts';
import { bundleKey } from '../store/index.ts';
import { bundlesOf, type ConnectorPath } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { sendError } from './errors.ts';
import { answerThrow } from './guard.ts';
import { sendUncachedJson } from './reply.ts';
import { parseUpload, type UploadText } from './upload.ts';
import { refuseUpload, serveUpload, type UploadRoute } from './upload-route.ts';

/** Decision events validated or applied between two turns of the event loop. */
const SLICE = 500;
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** What the upload handler keeps between requests: counters bound once per label set. */
interface LogsState {
  readonly deps: ApiDeps;
  readonly log: Logger;
  readonly decisionCounters: Map<string, Counter.Internal>;
  readonly opaLines: Counter.Internal;
}

type Accepted = { ok: true; accepted: number } | { ok: false; code: 'bad_request' | 'not_found'; message: string };

function countDecision(state: LogsState, tenant: string, bundle: string, result: DecisionResult, n: number): void {
  const key = `${tenant}\u0000${bundle}\u0000${result}`;
  let c = state.decisionCounters.get(key);
  if (!c) {
    c = state.deps.metrics.agentDecisions.labels(tenant, bundle, result);
    state.decisionCounters.set(key, c);
  }
  c.inc(n);
}

/** Every event of an upload validated, a slice at a time, or the first problem. */
async function parseEvents(items: readonly unknown[]): Promise<{ ok: true; events: DecisionEvent[] } | { ok: false; message: string }> {
  const events: DecisionEvent[] = [];
  for (let from = 0; from < items.length; from += SLICE) {
    if (from > 0) await yieldToLoop();
    const slice = parseDecisionEvents(items.slice(from, from + SLICE), from);
    if (!slice.ok) return { ok: false, message: slice.message };
    for (const e of slice.value) events.push(e);
  }
  return { ok: true, events };
}

/** Counts, keeps (per bundle of ours) and logs each event, a slice at a time. */
async function applyEvents(
  state: LogsState,
  path: ConnectorPath,
  events: readonly DecisionEvent[],
  ours: Set<string>,
  clientIp: string,
): Promise<void> {
  const { fleet } = state.deps;
  const receivedMs = state.deps.now();
  const receivedAt = new Date(receivedMs).toISOString();
  const counts = new Map<string, { bundle: string; result: DecisionResult; n: number }>();
  for (let from = 0; from < events.length; from += SLICE) {
    if (from > 0) await yieldToLoop();
    for (const e of events.slice(from, from + SLICE)) {
      const bundle = e.bundles.find((b) => ours.has(b.name));
      const slot = `${bundle?.name ?? ''}\u0000${e.decision}`;
      const c = counts.get(slot);
      if (c) c.n++;
      else counts.set(slot, { bundle: bundle?.name ?? '', result: e.decision, n: 1 });
      if (bundle !== undefined) {
        fleet.recent.add(bundleKey(path.tenant, bundle.name), {
          time: e.timestamp ?? receivedAt,
          agent: e.agentId,
          decisionId: e.decisionId,
          revision: bundle.revision,
          path: e.path,
          decision: e.decision,
          result: e.result,
          input: e.input,
        });
      }
      if (fleet.sink.enabled) {
        fleet.sink.write(
          agentDecisionLine({ receivedMs, tenant: path.tenant, connector: path.connector, bundle: bundle?.name, clientIp, event: e }),
        );
        state.opaLines.inc();
      }
    }
  }
  for (const c of counts.values()) countDecision(state, path.tenant, c.bundle, c.result, c.n);
}

/**
 * Validates every event, then applies them (counted, kept, logged), a slice at a time with the
 * event loop free in between: a 4 MiB upload of tiny events held it for 385 ms in one piece.
 * Nothing is applied unless the whole upload is valid.
 */
async function accept(state: LogsState, path: ConnectorPath, items: readonly unknown[], clientIp: string): Promise<Accepted> {
  const parsed = await parseEvents(items);
  if (!parsed.ok) return { ok: false, code: 'bad_request', message: parsed.message };
  const { events } = parsed;
  const names = new Set<string>();
  for (const e of events) for (const b of e.bundles) names.add(b.name);
  const bundles = bundlesOf(state.deps.store.snapshot(), path, names);
  if (!bundles.ok) return { ok: false, code: 'not_found', message: bundles.message };
  await applyEvents(state, path, events, bundles.ours, clientIp);
  if (state.log.isLevelEnabled('debug'))
    state.log.debug({ tenant: path.tenant, connector: path.connector, decisions: events.length }, 'Received decision logs');
  return { ok: true, accepted: events.length };
}

/** Answers an upload whose body has been read: its 400/404/413, or 200 once every event is applied. */
function answerUpload(
  state: LogsState,
  route: UploadRoute,
  req: IncomingMessage,
  res: ServerResponse,
  path: ConnectorPath,
  text: UploadText,
): void {
  const { count } = route;
  if (!text.ok) {
    refuseUpload(req, res, text.code, text.message);
    count(text.code);
    return;
  }
  // Every number is kept as OPA sent it (a cheap scan finds the rare upload with a number a double
  // would change; only then is it parsed the slower, exact way).
  const body = parseUpload(text.text, parseLosslessJson);
  if (!body.ok) {
    sendError(res, body.code, body.message);
    count(body.code);
    return;
  }
  if (!Array.isArray(body.value)) {
    const whole = parseDecisionUpload(body.value);
    sendError(res, 'bad_request', whole.ok ? 'not an upload' : whole.message);
    count('bad_request');
    return;
  }
  accept(state, path, body.value, req.socket.remoteAddress ?? '')
    .then((outcome) => {
      if (outcome.ok) {
        sendUncachedJson(res, { accepted: outcome.accepted });
        count('accepted');
        return;
      }
      sendError(res, outcome.code, outcome.message);
      count(outcome.code);
    })
    // The answer to an accepted upload is a 500 too when it throws, never a crash.
    .catch((err: unknown) => answerThrow(route.site, req, res, err));
}

/** The decision-log upload handler; `log` is the fleet's child logger. */
export function createLogsHandler(deps: ApiDeps, log: Logger): (req: IncomingMessage, res: ServerResponse, path: ConnectorPath) => void {
  const state: LogsState = { deps, log, decisionCounters: new Map(), opaLines: deps.metrics.decisionLogLines.labels('opa') };
  const route: UploadRoute = {
    site: { log, fields: () => ({ path: 'logs' }), echo: false },
    count: (o) => {
      deps.metrics.decisionLogUploads.inc({ outcome: o });
    },
    // Decisions are audit data: only a valid token of an Active connector adds any.
    readsRefused: () => false,
    answer: (req, res, path, _verdict, text) => {
      answerUpload(state, route, req, res, path, text);
    },
  };
  return function logs(req, res, path) {
    serveUpload(deps, route, req, res, path);
  };
}
