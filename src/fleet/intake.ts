// What becomes of an OPA upload's bytes before anything of it reaches the event loop: the uploads
// thread (work/uploads-worker.ts) reads them to JSON (body.ts: inflated, scanned, parsed), validates
// the report or the events, and for decision logs also makes what the decision log and the
// recent-decisions buffer need. The event loop collects the bytes and applies the small, validated
// result (http/status.ts, http/logs.ts); requests, parts and answers are plain data.
import { readUploadJson, type UploadBody, type UploadFailure } from './body.ts';
import { parseDecisionEvents, parseDecisionUpload, type DecisionEvent, type DecisionResult } from './events.ts';
import { keptForRecent } from './json.ts';
import { agentDecisionLine } from './lines.ts';
import { ownedBundles } from './owned.ts';
import type { RecentDecision } from './recent.ts';
import { parseStatusReport, type StatusReport } from './report.ts';

/** Where a decision-log upload goes: what the event loop knew when it arrived. */
export interface LogsContext {
  readonly tenant: string;
  readonly connector: string;
  /** The tenant's bundles, each with the connector that serves it. */
  readonly bundles: readonly (readonly [bundle: string, connector: string])[];
  readonly receivedMs: number;
  readonly clientIp: string;
  /** Whether decision-log lines are wanted (--decision-log is not off). */
  readonly lines: boolean;
  /** Decisions the recent-decisions buffer keeps per bundle: older ones are not sent. */
  readonly recentPerBundle: number;
}

export type { UploadBody, UploadFailure };

export type UploadRequest =
  | (UploadBody & { readonly kind: 'status' })
  | (UploadBody & { readonly kind: 'logs'; readonly logs: LogsContext });

/** Decisions of one result for one bundle ('' for none of ours). */
export interface DecisionCount {
  readonly bundle: string;
  readonly result: DecisionResult;
  readonly n: number;
}

/** A decision for the recent-decisions buffer; input and result as JSON text, so exact numbers cross the thread. */
export interface KeptDecision extends Omit<RecentDecision, 'input' | 'result'> {
  readonly bundle: string;
  readonly input: string | undefined;
  readonly result: string | undefined;
}

/** Sent ahead of a decision-log answer, each small enough to take on the event loop in well under a millisecond. */
export type UploadPart = { readonly lines: readonly string[] } | { readonly recent: readonly KeptDecision[] };

export type UploadAnswer =
  | UploadFailure
  | { readonly ok: true; readonly kind: 'status'; readonly report: StatusReport }
  | { readonly ok: true; readonly kind: 'logs'; readonly accepted: number; readonly counts: readonly DecisionCount[] };

/** Reads uploads off the event loop (work/uploads.ts); a failure is an answer, never a rejection. */
export interface UploadReader {
  read(request: UploadRequest, onPart?: (part: UploadPart) => void): Promise<UploadAnswer>;
}

/** Characters of decision-log lines per part. */
const LINES_PER_PART_CHARS = 256 * 1024;
/** Recent decisions per part (each at most about 8 KiB of JSON text). */
const RECENT_PER_PART = 32;

/** Reads one upload: a status report's agent and bundles, or a decision-log upload's events sent as parts, then counted. */
export async function readUpload(request: UploadRequest, send: (part: UploadPart) => void): Promise<UploadAnswer> {
  // No exact numbers in a status report's case: none of them is logged (OPA's own metrics are most of it).
  const json = await readUploadJson(request, request.kind === 'logs');
  if (!json.ok) return json;
  if (request.kind === 'status') {
    const report = parseStatusReport(json.value);
    return report.ok ? { ok: true, kind: 'status', report: report.value } : { ok: false, code: 'bad_request', message: report.message };
  }
  if (!Array.isArray(json.value)) {
    const whole = parseDecisionUpload(json.value);
    return { ok: false, code: 'bad_request', message: whole.ok ? 'not an upload' : whole.message };
  }
  const events = parseDecisionEvents(json.value);
  if (!events.ok) return { ok: false, code: 'bad_request', message: events.message };
  return readEvents(events.value, request.logs, send);
}

/** Nothing is sent unless every event is valid and names only bundles of the connector: an upload is applied whole or not at all. */
function readEvents(events: readonly DecisionEvent[], at: LogsContext, send: (part: UploadPart) => void): UploadAnswer {
  const served = new Map(at.bundles);
  const names = new Set<string>();
  for (const e of events) for (const b of e.bundles) names.add(b.name);
  const owned = ownedBundles(names, at.connector, (name) => served.get(name));
  if (!owned.ok) return { ok: false, code: 'not_found', message: owned.message };
  const bundleOf = events.map((e) => e.bundles.find((b) => owned.ours.has(b.name)));
  const counts = new Map<string, { bundle: string; result: DecisionResult; n: number }>();
  for (const [i, e] of events.entries()) {
    const bundle = bundleOf[i]?.name ?? '';
    const slot = `${bundle}\u0000${e.decision}`;
    const c = counts.get(slot);
    if (c) c.n++;
    else counts.set(slot, { bundle, result: e.decision, n: 1 });
  }
  if (at.lines) sendLines(events, bundleOf, at, send);
  sendRecent(events, bundleOf, at, send);
  return { ok: true, kind: 'logs', accepted: events.length, counts: [...counts.values()] };
}

type BundleOf = readonly ({ readonly name: string; readonly revision: string | undefined } | undefined)[];

function sendLines(events: readonly DecisionEvent[], bundleOf: BundleOf, at: LogsContext, send: (part: UploadPart) => void): void {
  let lines: string[] = [];
  let chars = 0;
  for (const [i, event] of events.entries()) {
    const { receivedMs, tenant, connector, clientIp } = at;
    const line = agentDecisionLine({ receivedMs, tenant, connector, clientIp, bundle: bundleOf[i]?.name, event });
    lines.push(line);
    chars += line.length;
    if (chars >= LINES_PER_PART_CHARS) {
      send({ lines });
      lines = [];
      chars = 0;
    }
  }
  if (lines.length > 0) send({ lines });
}

/** The newest `recentPerBundle` decisions of each bundle of ours, oldest first (older ones would only be pushed out). */
function sendRecent(events: readonly DecisionEvent[], bundleOf: BundleOf, at: LogsContext, send: (part: UploadPart) => void): void {
  const left = new Map<string, number>();
  const newestFirst: KeptDecision[] = [];
  const receivedAt = new Date(at.receivedMs).toISOString();
  for (let i = events.length - 1; i >= 0; i--) {
    const bundle = bundleOf[i];
    const e = events[i] as DecisionEvent;
    if (bundle === undefined) continue;
    const n = left.get(bundle.name) ?? at.recentPerBundle;
    if (n === 0) continue;
    left.set(bundle.name, n - 1);
    newestFirst.push({
      bundle: bundle.name,
      time: e.timestamp ?? receivedAt,
      agent: e.agentId,
      decisionId: e.decisionId,
      revision: bundle.revision,
      path: e.path,
      decision: e.decision,
      input: JSON.stringify(keptForRecent(e.input)),
      result: JSON.stringify(keptForRecent(e.result)),
    });
  }
  const kept = newestFirst.reverse();
  for (let i = 0; i < kept.length; i += RECENT_PER_PART) send({ recent: kept.slice(i, i + RECENT_PER_PART) });
}
