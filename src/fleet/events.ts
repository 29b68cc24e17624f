// OPA's decision-log upload (decision_logs plugin, POST <service url>/logs, a gzip JSON array),
// parsed once at the edge, and what each decision was: allow, deny, an evaluation error, no result
// (no policy loaded yet), or another result. Shape checked against real OPA 0.61 and 1.1 uploads.
import { z } from 'zod';
import { MAX_BUNDLES_NAMED, tooManyKeys, type Parsed } from './report.ts';

export type DecisionResult = 'allow' | 'deny' | 'error' | 'undefined' | 'other';
export const DECISION_RESULTS: readonly DecisionResult[] = ['allow', 'deny', 'error', 'undefined', 'other'];

const Event = z.looseObject({
  labels: z.looseObject({ id: z.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 printable ASCII characters'), version: z.string().max(64).optional() }),
  decision_id: z.string().max(256).optional(),
  path: z.string().max(1024).optional(),
  query: z.string().max(4096).optional(),
  timestamp: z.string().max(64).optional(),
  bundles: z.record(z.string().min(1).max(253), z.looseObject({ revision: z.string().max(1024).optional() })).optional(),
  input: z.unknown().optional(),
  result: z.unknown().optional(),
  error: z.unknown().optional(),
});
const Upload = z.array(Event);

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

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * What a decision was. Only our package counts as allow or deny: `data.acl.allow` (path `acl/allow`,
 * a boolean) or `data.acl` (path `acl`, an object whose `allow` is a boolean). An error, no result at
 * all, or anything else is reported as such.
 */
export function classify(path: string | undefined, result: unknown, error: unknown): DecisionResult {
  if (error !== undefined && error !== null) return 'error';
  if (result === undefined) return 'undefined';
  const allow = path === 'acl/allow' ? result : path === 'acl' && isRecord(result) ? result['allow'] : undefined;
  if (typeof allow === 'boolean') return allow ? 'allow' : 'deny';
  return 'other';
}

const NOT_AN_UPLOAD = 'not an OPA decision log upload (a JSON array of decision events)';

/**
 * Parses events `items` of an upload, the first being number `from` of the upload (so messages
 * name the event): an upload is parsed a slice at a time, without holding the event loop.
 */
export function parseDecisionEvents(items: readonly unknown[], from = 0): Parsed<DecisionEvent[]> {
  const crowded = items.findIndex((e) => typeof e === 'object' && e !== null && tooManyKeys((e as { bundles?: unknown }).bundles, MAX_BUNDLES_NAMED));
  if (crowded !== -1) return { ok: false, message: `${NOT_AN_UPLOAD}: ${from + crowded}.bundles: names more than ${MAX_BUNDLES_NAMED} bundles` };
  const parsed = Upload.safeParse(items);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const [index, ...rest] = issue?.path ?? [];
    const where = typeof index === 'number' ? [from + index, ...rest].map(String).join('.') : '';
    return { ok: false, message: `${NOT_AN_UPLOAD}: ${where === '' ? '' : `${where}: `}${issue?.message ?? 'invalid'}` };
  }
  return {
    ok: true,
    value: parsed.data.map((e) => {
      const path = e.path ?? e.query;
      return {
        agentId: e.labels.id,
        agentVersion: e.labels.version,
        decisionId: e.decision_id,
        path,
        timestamp: e.timestamp,
        bundles: Object.entries(e.bundles ?? {}).map(([name, b]) => ({ name, revision: b.revision })),
        input: e.input,
        result: e.result,
        error: e.error,
        decision: classify(e.path, e.result, e.error),
      };
    }),
  };
}

/** Parses a whole decision-log upload (already gunzipped and parsed); the message names the first problem. */
export function parseDecisionUpload(body: unknown): Parsed<DecisionEvent[]> {
  if (!Array.isArray(body)) return { ok: false, message: `${NOT_AN_UPLOAD}: the body is ${body === null ? 'null' : typeof body === 'object' ? 'an object' : `a ${typeof body}`}` };
  return parseDecisionEvents(body, 0);
}
