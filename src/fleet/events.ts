// OPA's decision-log upload (decision_logs plugin, POST <service url>/logs, a gzip JSON array),
// parsed once at the edge, and what each decision was: allow, deny, an evaluation error, no result
// (no policy loaded yet), or another result. Shape checked against real OPA 0.61 and 1.1 uploads.
//
// Checked by hand rather than with a zod schema: 1,000 OPAs upload about 10,000 decisions a second,
// and the schema cost 1.9 µs an event, as much as JSON.parse of it (bench/fleet.ts). The rules are
// those of a schema (test/fuzz-fleet.test.ts restates them and holds every answer to them).
import { AGENT_ID, MAX_BUNDLES_NAMED, tooManyKeys, type Parsed } from './report.ts';
import { isObject } from '../api/index.ts';

export type DecisionResult = 'allow' | 'deny' | 'error' | 'undefined' | 'other';

/** One decision an OPA made, as its decision log reported it. */
export interface DecisionEvent {
  readonly agentId: string;
  readonly agentVersion: string | undefined;
  readonly decisionId: string | undefined;
  /** The data path queried (`acl/allow`), or the ad-hoc query. */
  readonly path: string | undefined;
  /** When OPA decided (OPA's clock). */
  readonly timestamp: string | undefined;
  /** The bundles active when it decided, with their revisions. */
  readonly bundles: readonly { readonly name: string; readonly revision: string | undefined }[];
  readonly input: unknown;
  readonly result: unknown;
  readonly error: unknown;
  readonly decision: DecisionResult;
}

/**
 * What a decision was. Only our package counts as allow or deny: `data.acl.allow` (path `acl/allow`,
 * a boolean) or `data.acl` (path `acl`, an object whose `allow` is a boolean). An error, no result at
 * all, or anything else is reported as such.
 */
export function classify(path: string | undefined, result: unknown, error: unknown): DecisionResult {
  if (error !== undefined && error !== null) return 'error';
  if (result === undefined) return 'undefined';
  const allow = path === 'acl/allow' ? result : path === 'acl' && isObject(result) ? result['allow'] : undefined;
  if (typeof allow === 'boolean') return allow ? 'allow' : 'deny';
  return 'other';
}

const NOT_AN_UPLOAD = 'not an OPA decision log upload (a JSON array of decision events)';

/** Absent, or a string of at most `max` UTF-16 units; else what is wrong. */
function textProblem(v: unknown, max: number): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') return `must be a string, not ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`;
  return v.length <= max ? undefined : `must be at most ${max} characters`;
}

/** One event, checked: the event, or `[field path, problem]`. */
function eventOf(e: unknown): DecisionEvent | readonly [string, string] {
  if (!isObject(e)) return ['', 'must be an object'];
  const labels = e['labels'];
  if (!isObject(labels)) return ['labels', labels === undefined ? 'is required (OPA sets labels.id)' : 'must be an object'];
  const id = labels['id'];
  if (typeof id !== 'string' || !AGENT_ID.test(id)) return ['labels.id', 'must be 1 to 128 printable ASCII characters'];
  for (const [field, max, value] of [
    ['labels.version', 64, labels['version']],
    ['decision_id', 256, e['decision_id']],
    ['path', 1024, e['path']],
    ['query', 4096, e['query']],
    ['timestamp', 64, e['timestamp']],
  ] as const) {
    const problem = textProblem(value, max);
    if (problem !== undefined) return [field, problem];
  }
  const named: { name: string; revision: string | undefined }[] = [];
  const bundles = e['bundles'];
  if (bundles !== undefined) {
    if (!isObject(bundles)) return ['bundles', 'must be an object'];
    if (tooManyKeys(bundles, MAX_BUNDLES_NAMED)) return ['bundles', `names more than ${MAX_BUNDLES_NAMED} bundles`];
    for (const name in bundles) {
      if (!Object.hasOwn(bundles, name)) continue;
      if (name.length < 1 || name.length > 253) return [`bundles.${name.slice(0, 64)}`, 'a bundle name must be 1 to 253 characters'];
      const b = bundles[name];
      if (!isObject(b)) return [`bundles.${name}`, 'must be an object'];
      const problem = textProblem(b['revision'], 1024);
      if (problem !== undefined) return [`bundles.${name}.revision`, problem];
      named.push({ name, revision: b['revision'] as string | undefined });
    }
  }
  const path = (e['path'] ?? e['query']) as string | undefined;
  return {
    agentId: id,
    agentVersion: labels['version'] as string | undefined,
    decisionId: e['decision_id'] as string | undefined,
    path,
    timestamp: e['timestamp'] as string | undefined,
    bundles: named,
    input: e['input'],
    result: e['result'],
    error: e['error'],
    decision: classify(e['path'] as string | undefined, e['result'], e['error']),
  };
}

/**
 * Parses events `items` of an upload, the first being number `from` of the upload (so messages
 * name the event): an upload is parsed a slice at a time, without holding the event loop.
 */
export function parseDecisionEvents(items: readonly unknown[], from = 0): Parsed<DecisionEvent[]> {
  const out: DecisionEvent[] = [];
  for (let i = 0; i < items.length; i++) {
    const e = eventOf(items[i]);
    if (Array.isArray(e)) {
      const [field, problem] = e as readonly [string, string];
      return { ok: false, message: `${NOT_AN_UPLOAD}: ${from + i}${field === '' ? '' : `.${field}`}: ${problem}` };
    }
    out.push(e as DecisionEvent);
  }
  return { ok: true, value: out };
}

/** Parses a whole decision-log upload (already gunzipped and parsed); the message names the first problem. */
export function parseDecisionUpload(body: unknown): Parsed<DecisionEvent[]> {
  if (!Array.isArray(body))
    return {
      ok: false,
      message: `${NOT_AN_UPLOAD}: the body is ${body === null ? 'null' : typeof body === 'object' ? 'an object' : `a ${typeof body}`}`,
    };
  return parseDecisionEvents(body, 0);
}
