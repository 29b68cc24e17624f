// What becomes of an OPA upload's bytes before anything of it reaches the event loop: the uploads
// thread (uploads-worker.ts) reads them to JSON (body.ts: inflated, scanned, parsed), validates
// the report or the events, and for decision logs also makes what the decision log and the
// recent-decisions buffer need. The event loop collects the bytes and applies the small, validated
// result (http/status.ts, http/logs.ts); requests, parts and answers are plain data.
import { readUploadJson, type UploadBody, type UploadFailure } from './body.ts';
import { parseDecisionEvents, parseDecisionUpload, type DecisionEvent, type DecisionResult } from './events.ts';
import { keptWithSize } from './json.ts';
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

/**
 * Decisions of one bundle for the recent-decisions buffer, oldest first, their input and result at
 * most MAX_KEPT_BYTES each. When the upload holds a number a double would change (`asText`) input
 * and result are JSON text: the JSON.rawJSON values that keep such numbers cannot cross a thread.
 */
export interface RecentBatch {
  readonly bundle: string;
  readonly asText: boolean;
  readonly decisions: readonly RecentDecision[];
}

/** What a decision-log upload brings, in parts, each small enough to take on the event loop in well under a millisecond. */
export type UploadPart = { readonly lines: readonly string[] } | { readonly recent: readonly RecentBatch[] };

export type UploadAnswer =
  | UploadFailure
  | { readonly ok: true; readonly kind: 'status'; readonly report: StatusReport }
  | {
      readonly ok: true;
      readonly kind: 'logs';
      readonly accepted: number;
      readonly counts: readonly DecisionCount[];
      /** The parts not sent ahead: all of them when they fit in one (one message rather than several). */
      readonly parts: readonly UploadPart[];
    };

/** Reads uploads off the event loop (uploads-thread.ts); a failure is an answer, never a rejection. */
export interface UploadReader {
  read(request: UploadRequest, onPart?: (part: UploadPart) => void): Promise<UploadAnswer>;
}

/** A part's size at most (characters of lines, or estimated JSON bytes of recent decisions). */
const PART_CHARS = 256 * 1024;

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
  return readEvents(events.value, request.logs, json.keptNumbers, send);
}

/** Nothing is sent unless every event is valid and names only bundles of the connector: an upload is applied whole or not at all. */
function readEvents(events: readonly DecisionEvent[], at: LogsContext, asText: boolean, send: (part: UploadPart) => void): UploadAnswer {
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
  const built = createParts();
  if (at.lines) lineParts(events, bundleOf, at, built);
  recentParts(events, bundleOf, at, asText, built);
  const parts = built.done();
  const answer = { ok: true, kind: 'logs', accepted: events.length, counts: [...counts.values()] } as const;
  if (parts.chars <= PART_CHARS) return { ...answer, parts: parts.all };
  for (const part of parts.all) send(part);
  return { ...answer, parts: [] };
}

interface PartsBuilder {
  line(line: string): void;
  recent(bundle: string, asText: boolean, d: RecentDecision, chars: number): void;
  /** The parts, in order, and their size in all. */
  done(): { readonly all: readonly UploadPart[]; readonly chars: number };
}

/** Lines and recent decisions (in one batch per bundle and part) cut into parts of at most PART_CHARS each, in order. */
function createParts(): PartsBuilder {
  const all: UploadPart[] = [];
  let chars = 0;
  let lines: string[] = [];
  let recent: { bundle: string; asText: boolean; decisions: RecentDecision[] }[] = [];
  let open = 0;
  const close = (): void => {
    if (lines.length > 0) all.push({ lines });
    if (recent.length > 0) all.push({ recent });
    lines = [];
    recent = [];
    open = 0;
  };
  const grow = (n: number): void => {
    chars += n;
    open += n;
    if (open >= PART_CHARS) close();
  };
  return {
    line(line) {
      if (recent.length > 0) close();
      lines.push(line);
      grow(line.length);
    },
    recent(bundle, asText, d, n) {
      if (lines.length > 0) close();
      const last = recent.at(-1);
      if (last?.bundle === bundle) last.decisions.push(d);
      else recent.push({ bundle, asText, decisions: [d] });
      grow(n);
    },
    done() {
      close();
      return { all, chars };
    },
  };
}

type BundleOf = readonly ({ readonly name: string; readonly revision: string | undefined } | undefined)[];

function lineParts(events: readonly DecisionEvent[], bundleOf: BundleOf, at: LogsContext, parts: PartsBuilder): void {
  const { receivedMs, tenant, connector, clientIp } = at;
  for (const [i, event] of events.entries())
    parts.line(agentDecisionLine({ receivedMs, tenant, connector, clientIp, bundle: bundleOf[i]?.name, event }));
}

/** The newest `recentPerBundle` decisions of each bundle of ours, oldest first (older ones would only be pushed out). */
function recentParts(events: readonly DecisionEvent[], bundleOf: BundleOf, at: LogsContext, asText: boolean, parts: PartsBuilder): void {
  const left = new Map<string, number>();
  const newestFirst: [string, RecentDecision, number][] = [];
  const receivedAt = new Date(at.receivedMs).toISOString();
  for (let i = events.length - 1; i >= 0; i--) {
    const bundle = bundleOf[i];
    const e = events[i] as DecisionEvent;
    if (bundle === undefined) continue;
    const n = left.get(bundle.name) ?? at.recentPerBundle;
    if (n === 0) continue;
    left.set(bundle.name, n - 1);
    const input = keptWithSize(e.input);
    const result = keptWithSize(e.result);
    const d: RecentDecision = {
      time: e.timestamp ?? receivedAt,
      agent: e.agentId,
      decisionId: e.decisionId,
      revision: bundle.revision,
      path: e.path,
      decision: e.decision,
      input: asText ? JSON.stringify(input.value) : input.value,
      result: asText ? JSON.stringify(result.value) : result.value,
    };
    newestFirst.push([bundle.name, d, 256 + input.bytes + result.bytes]);
  }
  for (const [bundle, d, chars] of newestFirst.reverse()) parts.recent(bundle, asText, d, chars);
}
