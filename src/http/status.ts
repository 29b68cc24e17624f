// POST /{tenant}/connectors/policyagent/{connector}/status (docs/opa.md): OPA's status reports,
// with the connector token checked exactly as the bundle route checks it (connector.ts), read in the
// uploads thread (fleet/intake.ts). What a report says of our bundles is recorded per agent, for
// GET .../bundles/{bundle}/agents; only the connector's current token records anything.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BundleReport, StatusReport } from '../fleet/index.ts';
import type { UploadOutcome } from '../metrics.ts';
import { bundlesOf, type ConnectorPath, type ConnectorVerdict } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { sendError } from './errors.ts';
import type { UploadGate } from './gate.ts';
import { sendUncachedJson } from './reply.ts';
import type { UploadBytes } from './upload.ts';
import { outcomeOf, refuseUpload, serveUpload, type UploadRoute } from './upload-route.ts';

/** Agent ids already warned about for loading two of our bundles (bounded: a warning, not a record). */
const WARNED_KEPT = 1000;

/** What the status handler keeps between requests. */
interface StatusState {
  readonly deps: ApiDeps;
  readonly log: Logger;
  /** Kinds of problem already logged per agent. */
  readonly warned: Set<string>;
}

/** The refusal a report is still read for: the agent is recorded as failing with it. */
interface Refusal {
  readonly status: 403;
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
    signingKey: report.signingKey,
    clientIp: req.socket.remoteAddress ?? '',
    timeMs: state.deps.now(),
    bundles: entries,
    ...(refused ? { refused } : {}),
  });
}

/**
 * The current token of an Inactive connector: the report is read and the agent recorded as failing
 * 403, then the answer is the bundle route's. It is the connector's own token, and the operator
 * otherwise never hears from the sidecars it has stopped. Any other refused token (unknown,
 * rotated or revoked, another connector's) writes nothing and is not read at all.
 */
function refusalOf(verdict: ConnectorVerdict): Refusal | undefined {
  return verdict.code === 'forbidden' ? { status: 403, message: verdict.message } : undefined;
}

/** Answers a report once the uploads thread has read it: the refusal it was read for, its 400/404/413/503, or 200. */
async function answerReport(
  state: StatusState,
  req: IncomingMessage,
  res: ServerResponse,
  path: ConnectorPath,
  verdict: ConnectorVerdict,
  body: Extract<UploadBytes, { ok: true }>,
  count: (outcome: UploadOutcome) => void,
): Promise<void> {
  const read = await state.deps.fleet.uploads.read({
    kind: 'status',
    body: body.bytes,
    gzip: body.gzip,
    limitBytes: state.deps.fleet.maxUploadBytes,
  });
  const report = read.ok && read.kind === 'status' ? read.report : undefined;
  const bundles =
    report &&
    bundlesOf(
      state.deps.store.snapshot(),
      path,
      report.bundles.map((b) => b.name),
    );
  const refused = refusalOf(verdict);
  if (refused !== undefined && verdict.code !== 'ok') {
    if (report && bundles?.ok) record(state, path, report, bundles.ours, req, refused);
    refuseUpload(req, res, verdict.code, verdict.message);
    count('forbidden');
    return;
  }
  if (!read.ok) {
    refuseUpload(req, res, read.code, read.message);
    count(outcomeOf(read.code));
    return;
  }
  if (!report || !bundles) throw new Error(`the uploads thread answered a status report with ${read.kind}`);
  if (!bundles.ok) {
    sendError(res, 'not_found', bundles.message);
    count('not_found');
    return;
  }
  record(state, path, report, bundles.ours, req);
  sendUncachedJson(res, { agent: report.agentId, bundles: [...bundles.ours].sort(), ignored: [...bundles.ignored] });
  count('accepted');
  if (state.log.isLevelEnabled('debug'))
    state.log.debug(
      { tenant: path.tenant, connector: path.connector, agent: report.agentId, bundles: [...bundles.ours] },
      'Received a status report',
    );
}

/** The status report handler; `log` is the fleet's child logger; `unrecorded` notes reports refused at the token. */
export function createStatusHandler(
  deps: ApiDeps,
  log: Logger,
  gate: UploadGate,
  unrecorded: UploadRoute['unrecorded'],
): (req: IncomingMessage, res: ServerResponse, path: ConnectorPath) => void {
  const state: StatusState = { deps, log, warned: new Set() };
  const route: UploadRoute = {
    site: { log, fields: () => ({ path: 'status' }) },
    count: (o) => {
      deps.metrics.agentReports.inc({ outcome: o });
    },
    unrecorded,
    readsRefused: (verdict) => refusalOf(verdict) !== undefined,
    answer: (req, res, path, verdict, body) => answerReport(state, req, res, path, verdict, body, route.count),
  };
  return function status(req, res, path) {
    serveUpload(deps, gate, route, req, res, path);
  };
}
