// POST /{tenant}/connectors/policyagent/{connector}/logs (docs/opa.md): OPA's decision-log
// uploads, with the connector token checked exactly as the bundle route checks it (connector.ts).
// Decisions are audit data: only a valid token of an Active connector adds any, every number is
// kept as OPA sent it, and an upload is applied whole or not at all. The uploads thread reads it
// (fleet/intake.ts) and sends back only what is applied here: decision-log lines, the newest
// decisions per bundle, and counts, in parts taken one turn of the event loop at a time.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { parseLosslessJson, type DecisionResult, type UploadPart } from '../fleet/index.ts';
import { bundleKey, type BundleEntry } from '../store/index.ts';
import type { ConnectorPath } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import type { UploadGate } from './gate.ts';
import { sendUncachedJson } from './reply.ts';
import type { UploadBytes } from './upload.ts';
import { outcomeOf, refuseUpload, serveUpload, type UploadRoute } from './upload-route.ts';

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** What the upload handler keeps between requests: counters bound once per label set. */
interface LogsState {
  readonly deps: ApiDeps;
  readonly log: Logger;
  readonly decisionCounters: Map<string, Counter.Internal>;
  readonly opaLines: Counter.Internal;
  /** Each tenant's bundles with their connectors, as the uploads thread takes them, per snapshot of the tenant's bundles. */
  readonly served: WeakMap<ReadonlyMap<string, BundleEntry>, readonly (readonly [string, string])[]>;
}

function countDecision(state: LogsState, tenant: string, bundle: string, result: DecisionResult, n: number): void {
  const key = `${tenant}\u0000${bundle}\u0000${result}`;
  let c = state.decisionCounters.get(key);
  if (!c) {
    c = state.deps.metrics.agentDecisions.labels(tenant, bundle, result);
    state.decisionCounters.set(key, c);
  }
  c.inc(n);
}

function servedOf(state: LogsState, tenant: string): readonly (readonly [string, string])[] {
  const bundles = state.deps.store.snapshot().tenants.get(tenant)?.bundles;
  if (bundles === undefined) return [];
  let served = state.served.get(bundles);
  if (served === undefined) {
    served = [...bundles.values()].map((b) => [b.name, b.connector] as const);
    state.served.set(bundles, served);
  }
  return served;
}

/** One part of an accepted upload: decision-log lines, or decisions for the recent-decisions buffer. */
function applyPart(state: LogsState, path: ConnectorPath, part: UploadPart): void {
  const { fleet } = state.deps;
  if ('lines' in part) {
    for (const line of part.lines) fleet.sink.write(line);
    state.opaLines.inc(part.lines.length);
    return;
  }
  // Values as they came, or (an upload with a number a double would change) their JSON text.
  const value = (v: unknown): unknown => (typeof v === 'string' ? parseLosslessJson(v) : v);
  for (const { bundle, asText, decisions } of part.recent)
    fleet.recent.addKept(
      bundleKey(path.tenant, bundle),
      asText ? decisions.map((d) => ({ ...d, input: value(d.input), result: value(d.result) })) : decisions,
    );
}

/** Answers an upload once the uploads thread has read it: its 400/404/413/503, or 200 once every part is applied. */
async function answerUpload(
  state: LogsState,
  req: IncomingMessage,
  res: ServerResponse,
  path: ConnectorPath,
  body: Extract<UploadBytes, { ok: true }>,
  count: UploadRoute['count'],
): Promise<void> {
  const { fleet, now } = state.deps;
  const parts: UploadPart[] = [];
  const read = await fleet.uploads.read(
    {
      kind: 'logs',
      body: body.bytes,
      gzip: body.gzip,
      limitBytes: fleet.maxUploadBytes,
      logs: {
        tenant: path.tenant,
        connector: path.connector,
        bundles: servedOf(state, path.tenant),
        receivedMs: now(),
        clientIp: req.socket.remoteAddress ?? '',
        lines: fleet.sink.enabled,
        recentPerBundle: fleet.recent.capacity,
      },
    },
    (part) => parts.push(part),
  );
  if (!read.ok) {
    refuseUpload(req, res, read.code, read.message);
    count(outcomeOf(read.code));
    return;
  }
  if (read.kind !== 'logs') throw new Error(`the uploads thread answered a decision-log upload with ${read.kind}`);
  parts.push(...read.parts);
  for (const [i, part] of parts.entries()) {
    if (i > 0) await yieldToLoop();
    applyPart(state, path, part);
  }
  for (const c of read.counts) countDecision(state, path.tenant, c.bundle, c.result, c.n);
  sendUncachedJson(res, { accepted: read.accepted });
  count('accepted');
  if (state.log.isLevelEnabled('debug'))
    state.log.debug({ tenant: path.tenant, connector: path.connector, decisions: read.accepted }, 'Received decision logs');
}

/** The decision-log upload handler; `log` is the fleet's child logger; `unrecorded` notes uploads refused at the token. */
export function createLogsHandler(
  deps: ApiDeps,
  log: Logger,
  gate: UploadGate,
  unrecorded: UploadRoute['unrecorded'],
): (req: IncomingMessage, res: ServerResponse, path: ConnectorPath) => void {
  const state: LogsState = {
    deps,
    log,
    decisionCounters: new Map(),
    opaLines: deps.metrics.decisionLogLines.labels('opa'),
    served: new WeakMap(),
  };
  const route: UploadRoute = {
    site: { log, fields: () => ({ path: 'logs' }) },
    count: (o) => {
      deps.metrics.decisionLogUploads.inc({ outcome: o });
    },
    unrecorded,
    // Decisions are audit data: only a valid token of an Active connector adds any.
    readsRefused: () => false,
    answer: (req, res, path, _verdict, body) => answerUpload(state, req, res, path, body, route.count),
  };
  return function logs(req, res, path) {
    serveUpload(deps, gate, route, req, res, path);
  };
}
