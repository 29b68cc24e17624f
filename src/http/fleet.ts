// OPA's own reports (docs/opa.md): status (POST /{tenant}/connectors/policyagent/{connector}/status)
// and decision logs (POST .../logs), with the connector token checked exactly as the bundle route
// checks it (connector.ts); and what they told us, per bundle, for the tenant's API key:
// GET .../bundles/{bundle}/agents and .../decisions.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { Counter } from 'prom-client';
import {
  agentDecisionLine,
  agentsReport,
  parseDecisionEvents,
  parseDecisionUpload,
  parseLosslessJson,
  parseStatusReport,
  type BundleReport,
  type DecisionEvent,
  type DecisionResult,
  type StatusReport,
} from '../fleet/index.ts';
import type { UploadOutcome } from '../metrics.ts';
import { bundleKey, type Snapshot } from '../store/index.ts';
import { judgeConnector, type ConnectorPath } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { sendError, WWW_AUTHENTICATE, type FailureCode } from './errors.ts';
import { createBundleReadHandler } from './reads.ts';
import { sendUncachedJson as sendJson } from './reply.ts';
import { parseUpload, readUpload } from './upload.ts';

const OUTCOME: Partial<Record<FailureCode, UploadOutcome>> = {
  bad_request: 'bad_request',
  unauthenticated: 'unauthenticated',
  forbidden: 'forbidden',
  not_found: 'not_found',
  too_large: 'too_large',
};

/** Agent ids already warned about for loading two of our bundles (bounded: a warning, not a record). */
const WARNED_KEPT = 1000;
/** Decision events validated or applied between two turns of the event loop. */
const SLICE = 500;
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A refusal; the body is not read, so the connection closes after it (a large upload is not drained). */
function refuse(req: IncomingMessage, res: ServerResponse, code: FailureCode, message: string): void {
  const headers: Record<string, string> = code === 'unauthenticated' ? { 'WWW-Authenticate': WWW_AUTHENTICATE } : {};
  if (req.readableEnded) sendError(res, code, message, headers);
  else {
    sendError(res, code, message, { ...headers, Connection: 'close' });
    req.resume();
  }
}

/** The report's (or upload's) bundles that are this connector's; a bundle of another connector refuses it. */
function bundlesOf(
  snapshot: Snapshot,
  path: ConnectorPath,
  names: Iterable<string>,
): { ok: true; ours: Set<string>; ignored: Set<string> } | { ok: false; message: string } {
  const served = snapshot.tenants.get(path.tenant)?.bundles;
  const ours = new Set<string>();
  const ignored = new Set<string>();
  for (const name of names) {
    const b = served?.get(name);
    if (b === undefined) {
      ignored.add(name);
      continue;
    }
    if (b.connector !== path.connector) {
      return {
        ok: false,
        message: `connector ${path.connector} has no bundle ${name}: a report may name only bundles of the connector its token belongs to`,
      };
    }
    ours.add(name);
  }
  return { ok: true, ours, ignored };
}

export interface FleetHandlers {
  status(req: IncomingMessage, res: ServerResponse, path: ConnectorPath): void;
  logs(req: IncomingMessage, res: ServerResponse, path: ConnectorPath): void;
  agents(req: Request, res: Response): void;
  decisions(req: Request, res: Response): void;
}

export function createFleetHandlers(deps: ApiDeps): FleetHandlers {
  const { fleet } = deps;
  const log = deps.log.child({ module: 'fleet' });
  const warned = new Set<string>();
  const decisionCounters = new Map<string, Counter.Internal>();
  const countDecision = (tenant: string, bundle: string, result: DecisionResult, n: number): void => {
    const key = `${tenant}\u0000${bundle}\u0000${result}`;
    let c = decisionCounters.get(key);
    if (!c) {
      c = deps.metrics.agentDecisions.labels(tenant, bundle, result);
      decisionCounters.set(key, c);
    }
    c.inc(n);
  };
  const opaLines = deps.metrics.decisionLogLines.labels('opa');

  /** Logs once per agent and kind of problem (bounded: a warning, not a record). */
  const warnOnce = (kind: string, path: ConnectorPath, agent: string, fields: Record<string, unknown>, message: string): void => {
    const id = `${kind}/${path.tenant}/${path.connector}/${agent}`;
    if (warned.has(id)) return;
    if (warned.size >= WARNED_KEPT) warned.clear();
    warned.add(id);
    log.warn({ tenant: path.tenant, connector: path.connector, agent, ...fields }, message);
  };

  function record(
    path: ConnectorPath,
    report: StatusReport,
    ours: Set<string>,
    req: IncomingMessage,
    refused?: { status: 401 | 403; message: string },
  ): void {
    const entries: BundleReport[] = report.bundles.filter((b) => ours.has(b.name));
    if (entries.length === 0) {
      // OPA names bundles by their key in its configuration: another key than the Bundle's name is never counted.
      if (report.bundles.length > 0) {
        warnOnce(
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
        'several',
        path,
        report.agentId,
        { bundles: entries.map((b) => b.name) },
        'An OPA is configured with several bundles of one connector: their roots overlap and only one can activate',
      );
    }
    fleet.agents.record({
      tenant: path.tenant,
      agentId: report.agentId,
      version: report.version,
      clientIp: req.socket.remoteAddress ?? '',
      timeMs: deps.now(),
      bundles: entries,
      ...(refused ? { refused } : {}),
    });
  }

  /**
   * Validates every event, then applies them (counted, kept, logged), a slice at a time with the
   * event loop free in between: a 4 MiB upload of tiny events held it for 385 ms in one piece.
   * Nothing is applied unless the whole upload is valid.
   */
  async function accept(
    path: ConnectorPath,
    items: readonly unknown[],
    clientIp: string,
  ): Promise<{ ok: true; accepted: number } | { ok: false; code: 'bad_request' | 'not_found'; message: string }> {
    const events: DecisionEvent[] = [];
    for (let from = 0; from < items.length; from += SLICE) {
      if (from > 0) await yieldToLoop();
      const slice = parseDecisionEvents(items.slice(from, from + SLICE), from);
      if (!slice.ok) return { ok: false, code: 'bad_request', message: slice.message };
      for (const e of slice.value) events.push(e);
    }
    const names = new Set<string>();
    for (const e of events) for (const b of e.bundles) names.add(b.name);
    const bundles = bundlesOf(deps.store.snapshot(), path, names);
    if (!bundles.ok) return { ok: false, code: 'not_found', message: bundles.message };
    const receivedMs = deps.now();
    const receivedAt = new Date(receivedMs).toISOString();
    const counts = new Map<string, { bundle: string; result: DecisionResult; n: number }>();
    for (let from = 0; from < events.length; from += SLICE) {
      if (from > 0) await yieldToLoop();
      for (const e of events.slice(from, from + SLICE)) {
        const bundle = e.bundles.find((b) => bundles.ours.has(b.name));
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
          opaLines.inc();
        }
      }
    }
    for (const c of counts.values()) countDecision(path.tenant, c.bundle, c.result, c.n);
    if (log.isLevelEnabled('debug'))
      log.debug({ tenant: path.tenant, connector: path.connector, decisions: events.length }, 'Received decision logs');
    return { ok: true, accepted: events.length };
  }

  return {
    status(req, res, path) {
      const count = (o: UploadOutcome): void => {
        deps.metrics.agentReports.inc({ outcome: o });
      };
      const verdict = judgeConnector(deps.store.snapshot(), path, req.headers.authorization);
      // Recognised but refused (a rotated or revoked token of this connector, or an Inactive
      // connector): the report is read and the agent recorded as failing, then the answer is the
      // bundle route's. Everything else refused is not read at all.
      const refused =
        verdict.code === 'unauthenticated' && verdict.retired !== undefined
          ? { status: 401 as const, message: verdict.message }
          : verdict.code === 'forbidden'
            ? { status: 403 as const, message: verdict.message }
            : undefined;
      if (verdict.code !== 'ok' && refused === undefined) {
        refuse(req, res, verdict.code, verdict.message);
        count(OUTCOME[verdict.code] ?? 'bad_request');
        return;
      }
      readUpload(req, fleet.maxUploadBytes, function statusBody(text) {
        try {
          // No exact numbers needed here (OPA's own metrics are most of a report).
          const body = text.ok ? parseUpload(text.text) : text;
          const report = body.ok ? parseStatusReport(body.value) : undefined;
          const bundles = report?.ok
            ? bundlesOf(
                deps.store.snapshot(),
                path,
                report.value.bundles.map((b) => b.name),
              )
            : undefined;
          if (refused !== undefined && verdict.code !== 'ok') {
            if (report?.ok && bundles?.ok) record(path, report.value, bundles.ours, req, refused);
            refuse(req, res, verdict.code, verdict.message);
            count(refused.status === 401 ? 'unauthenticated' : 'forbidden');
            return;
          }
          if (!body.ok) {
            refuse(req, res, body.code, body.message);
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
          record(path, report.value, bundles.ours, req);
          sendJson(res, { agent: report.value.agentId, bundles: [...bundles.ours].sort(), ignored: [...bundles.ignored] });
          count('accepted');
          if (log.isLevelEnabled('debug'))
            log.debug(
              { tenant: path.tenant, connector: path.connector, agent: report.value.agentId, bundles: [...bundles.ours] },
              'Received a status report',
            );
        } catch (err) {
          log.error({ err, path: 'status' }, 'Failed to serve request');
          sendError(res, 'internal', 'internal error');
        }
      });
    },

    logs(req, res, path) {
      const count = (o: UploadOutcome): void => {
        deps.metrics.decisionLogUploads.inc({ outcome: o });
      };
      const verdict = judgeConnector(deps.store.snapshot(), path, req.headers.authorization);
      // Decisions are audit data: only a valid token of an Active connector adds any.
      if (verdict.code !== 'ok') {
        refuse(req, res, verdict.code, verdict.message);
        count(OUTCOME[verdict.code] ?? 'bad_request');
        return;
      }
      // Whatever throws (here, or in the answer to an accepted upload) is a 500, never a crash.
      const fail = (err: unknown): void => {
        log.error({ err, path: 'logs' }, 'Failed to serve request');
        sendError(res, 'internal', 'internal error');
      };
      readUpload(req, fleet.maxUploadBytes, function logsBody(text) {
        try {
          if (!text.ok) {
            refuse(req, res, text.code, text.message);
            count(text.code);
            return;
          }
          // Decisions are audit data: every number is kept as OPA sent it (a cheap scan finds the rare
          // upload with a number a double would change; only then is it parsed the slower, exact way).
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
          accept(path, body.value, req.socket.remoteAddress ?? '')
            .then((outcome) => {
              if (outcome.ok) {
                sendJson(res, { accepted: outcome.accepted });
                count('accepted');
                return;
              }
              sendError(res, outcome.code, outcome.message);
              count(outcome.code);
            })
            .catch(fail);
        } catch (err) {
          fail(err);
        }
      });
    },

    agents: createBundleReadHandler(deps, (path, bundle) => {
      const {
        tenant,
        connector,
        bundle: name,
        revision,
        ...rest
      } = agentsReport(fleet.agents, { ...path, bundle: bundle.name, revision: bundle.built.revision }, deps.now());
      return rest;
    }),

    decisions: createBundleReadHandler(deps, (path, bundle) => ({ decisions: fleet.recent.list(bundleKey(path.tenant, bundle.name)) })),
  };
}
