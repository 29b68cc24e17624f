// POST /{tenant}/connectors/policyagent/{connector}/status (docs/opa.md): OPA's status reports,
// with the connector token checked exactly as the bundle route checks it (connector.ts). What a
// report says of our bundles is recorded per agent, for GET .../bundles/{bundle}/agents.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { parseStatusReport, type BundleReport, type StatusReport } from '../fleet/index.ts';
import type { UploadOutcome } from '../metrics.ts';
import { bundlesOf, type ConnectorPath, type ConnectorVerdict } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { sendError } from './errors.ts';
import { sendUncachedJson } from './reply.ts';
import { parseUpload, type UploadText } from './upload.ts';
import { refuseUpload, serveUpload, type UploadRoute } from './upload-route.ts';

/** Agent ids already warned about for loading two of our bundles (bounded: a warning, not a record). */
const WARNED_KEPT = 1000;

/** What the status handler keeps between requests. */
interface StatusState {
  readonly deps: ApiDeps;
  readonly log: Logger;
  /** Kinds of problem already logged per agent. */
  readonly warned: Set<string>;
}

/** A refusal the report is still read for: the agent is recorded as failing with it. */
interface Refusal {
  readonly status: 401 | 403;
  readonly message: string;
}

/** Logs once per agent and kind of problem (bounded: a warning, not a record). */
function warnOnce(
  state: StatusState,
  kind: string,
  path: ConnectorPath,
  agent: string,
  fields: Record<string, unknown>,
  message: string,
): void {
  const id = `${kind}/${path.tenant}/${path.connector}/${agent}`;
  if (state.warned.has(id)) return;
  if (state.warned.size >= WARNED_KEPT) state.warned.clear();
  state.warned.add(id);
  state.log.warn({ tenant: path.tenant, connector: path.connector, agent, ...fields }, message);
}

/** Records what an agent reports of the connector's bundles, or warns that it names none of them. */
function record(
  state: StatusState,
  path: ConnectorPath,
  report: StatusReport,
  ours: Set<string>,
  req: IncomingMessage,
  refused?: Refusal,
): void {
  const entries: BundleReport[] = report.bundles.filter((b) => ours.has(b.name));
  if (entries.length === 0) {
    // OPA names bundles by their key in its configuration: another key than the Bundle's name is never counted.
    if (report.bundles.length > 0) {
      warnOnce(
        state,
        'unknown',
        path,
        report.agentId,
        { reported: report.bundles.map((b) => b.name).slice(0, 10) },
        "An OPA reports no bundle of its connector: the key of each bundle in its configuration must be the Bundle's name",
      );
    }
    return;
  }
  if (entries.length > 1) {
    warnOnce(
      state,
      'several',
      path,
      report.agentId,
      { bundles: entries.map((b) => b.name) },
      'An OPA is configured with several bundles of one connector: their roots overlap and only one can activate',
    );
  }
  state.deps.fleet.agents.record({
    tenant: path.tenant,
    agentId: report.agentId,
    version: report.version,
    clientIp: req.socket.remoteAddress ?? '',
    timeMs: state.deps.now(),
    bundles: entries,
    ...(refused ? { refused } : {}),
  });
}

/**
 * Recognised but refused (a rotated or revoked token of this connector, or an Inactive
 * connector): the report is read and the agent recorded as failing, then the answer is the
 * bundle route's. Everything else refused is not read at all.
 */
function refusalOf(verdict: ConnectorVerdict): Refusal | undefined {
  if (verdict.code === 'unauthenticated' && verdict.retired !== undefined) return { status: 401, message: verdict.message };
  if (verdict.code === 'forbidden') return { status: 403, message: verdict.message };
  return undefined;
}

/** Answers a report whose body has been read: the refusal it was read for, its 400/404/413, or 200. */
function answerReport(
  state: StatusState,
  req: IncomingMessage,
  res: ServerResponse,
  path: ConnectorPath,
  verdict: ConnectorVerdict,
  text: UploadText,
  count: (outcome: UploadOutcome) => void,
): void {
  // No exact numbers needed here (OPA's own metrics are most of a report).
  const body = text.ok ? parseUpload(text.text) : text;
  const report = body.ok ? parseStatusReport(body.value) : undefined;
  const names = report?.ok ? report.value.bundles.map((b) => b.name) : undefined;
  const bundles = names === undefined ? undefined : bundlesOf(state.deps.store.snapshot(), path, names);
  const refused = refusalOf(verdict);
  if (refused !== undefined && verdict.code !== 'ok') {
    if (report?.ok && bundles?.ok) record(state, path, report.value, bundles.ours, req, refused);
    refuseUpload(req, res, verdict.code, verdict.message);
    count(refused.status === 401 ? 'unauthenticated' : 'forbidden');
    return;
  }
  if (!body.ok) {
    refuseUpload(req, res, body.code, body.message);
    count(body.code);
    return;
  }
  if (!report?.ok) {
    sendError(res, 'bad_request', report?.message ?? 'not an OPA status report');
    count('bad_request');
    return;
  }
  if (!bundles?.ok) {
    sendError(res, 'not_found', bundles?.message ?? 'unknown bundle');
    count('not_found');
    return;
  }
  record(state, path, report.value, bundles.ours, req);
  sendUncachedJson(res, { agent: report.value.agentId, bundles: [...bundles.ours].sort(), ignored: [...bundles.ignored] });
  count('accepted');
  if (state.log.isLevelEnabled('debug'))
    state.log.debug(
      { tenant: path.tenant, connector: path.connector, agent: report.value.agentId, bundles: [...bundles.ours] },
      'Received a status report',
    );
}

/** The status report handler; `log` is the fleet's child logger. */
export function createStatusHandler(deps: ApiDeps, log: Logger): (req: IncomingMessage, res: ServerResponse, path: ConnectorPath) => void {
  const state: StatusState = { deps, log, warned: new Set() };
  const route: UploadRoute = {
    site: { log, fields: () => ({ path: 'status' }), echo: false },
    count: (o) => {
      deps.metrics.agentReports.inc({ outcome: o });
    },
    readsRefused: (verdict) => refusalOf(verdict) !== undefined,
    answer: (req, res, path, verdict, text) => {
      answerReport(state, req, res, path, verdict, text, route.count);
    },
  };
  return function status(req, res, path) {
    serveUpload(deps, route, req, res, path);
  };
}
