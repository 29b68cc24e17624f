// The OpenID AuthZEN Authorization API 1.0 (docs/authzen.md): access evaluation, batch evaluation
// with evaluations_semantic, subject/resource/action search with opaque page tokens, and the PDP
// metadata document. Pure functions of a parsed body and a tenant's view: the HTTP glue is in
// http/endpoints.ts. They decide through the same mapping and evaluator as POST /authorization.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../bundle/index.ts';
import { codePointCompare, decide, type Decision, type DecisionInput, type EntityDirectory, type RuleIndex } from '../policy/index.ts';
import { AUTHZEN_ENDPOINT_NAMES, AUTHZEN_ENDPOINTS } from './paths.ts';
import { evaluationInputOf, inputOf, searchPartsOf, type SearchKind, type SearchParts } from './request.ts';
import { isObject } from '../api/index.ts';

/** What one tenant decides with. */
export interface TenantView {
  readonly tenant: string;
  readonly index: RuleIndex;
  readonly directory: EntityDirectory;
  /** Told of every decision an evaluation makes (the decision log); searches are not decisions. */
  readonly onDecision?: ((input: DecisionInput, decision: Decision) => void) | undefined;
}

/** A 200 with a JSON body, or a 400 with a message. */
export type Reply = { readonly ok: true; readonly body: unknown } | { readonly ok: false; readonly message: string };

function bad(message: string): Reply {
  return { ok: false, message };
}

// ---------------------------------------------------------------------------------------------
// Options

export const SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
export type Semantic = (typeof SEMANTICS)[number];

interface Options {
  readonly semantic: Semantic;
  /** `options.explain: true`: each decision carries context {policyId, reasons, timestamp}. */
  readonly explain: boolean;
}

function optionsOf(body: Record<string, unknown>): Options | string {
  const o = body['options'];
  if (o === undefined) return { semantic: 'execute_all', explain: false };
  if (!isObject(o)) return 'options must be an object';
  // Absent means the default; null is no value of either option (as a null context is no context).
  const semantic = o['evaluations_semantic'] === undefined ? 'execute_all' : o['evaluations_semantic'];
  if (typeof semantic !== 'string' || !(SEMANTICS as readonly string[]).includes(semantic)) {
    return `options.evaluations_semantic must be one of ${SEMANTICS.join(', ')}`;
  }
  const explain = o['explain'] === undefined ? false : o['explain'];
  if (typeof explain !== 'boolean') return 'options.explain must be true or false';
  return { semantic: semantic as Semantic, explain };
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/** `{decision}`, with the decision context when asked for. */
function decided(
  view: TenantView,
  input: DecisionInput,
  explain: boolean,
  timestamp: () => string,
): { decision: boolean; context?: unknown } {
  const d = decide(view.index, input, view.directory);
  view.onDecision?.(input, d);
  return explain
    ? { decision: d.allow, context: { policyId: d.policyId, reasons: d.reasons, timestamp: timestamp() } }
    : { decision: d.allow };
}

/** POST /access/v1/evaluation */
export function evaluation(body: unknown, view: TenantView, timestamp: () => string): Reply {
  if (!isObject(body)) return bad('the body must be a JSON object');
  const options = optionsOf(body);
  if (typeof options === 'string') return bad(options);
  const mapped = evaluationInputOf(body);
  if (!mapped.ok) return bad(mapped.message);
  return { ok: true, body: decided(view, mapped.input, options.explain, timestamp) };
}

/** Evaluations per batch request: more is a 400 (each item costs a decision). */
export const MAX_EVALUATIONS = 1000;

const ENTITY_IDS: Readonly<Record<'subject' | 'action' | 'resource', readonly string[]>> = {
  subject: ['type', 'id'],
  action: ['name'],
  resource: ['type', 'id'],
};

/**
 * One batch item with the request's defaults: an item's subject, action, resource or context
 * replaces the default whole (no deep merge: the default's properties never leak in), except that
 * an identifier the item's entity lacks (type, id, name) is the default's (AuthZEN certification
 * c-3-2-7); an id only when the item's type is the default's, since an id names an entity of a type.
 */
export function withDefaults(defaults: Record<string, unknown>, item: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['subject', 'action', 'resource', 'context'] as const) {
    const own = item[key];
    const fallback = defaults[key];
    if (own === undefined) {
      if (fallback !== undefined) out[key] = fallback;
      continue;
    }
    if (key !== 'context' && isObject(own) && isObject(fallback)) {
      const filled: Record<string, unknown> = { ...own };
      for (const id of ENTITY_IDS[key]) {
        // An id names an entity of one type: it is the default's only when the type is too.
        if (id === 'id' && filled['type'] !== fallback['type']) continue;
        if (own[id] === undefined && fallback[id] !== undefined) filled[id] = fallback[id];
      }
      out[key] = filled;
    } else {
      out[key] = own;
    }
  }
  return out;
}

/** POST /access/v1/evaluations */
export function evaluations(body: unknown, view: TenantView, timestamp: () => string): Reply {
  if (!isObject(body)) return bad('the body must be a JSON object');
  const options = optionsOf(body);
  if (typeof options === 'string') return bad(options);
  const items = body['evaluations'];
  if (items !== undefined && !Array.isArray(items)) return bad('evaluations must be an array');
  // Absent or empty: one evaluation of the top-level request, answered as one.
  if (items === undefined || items.length === 0) return evaluation(body, view, timestamp);
  if (items.length > MAX_EVALUATIONS) return bad(`evaluations: at most ${MAX_EVALUATIONS} per request, got ${items.length}`);
  const out: unknown[] = [];
  for (let i = 0; i < items.length; i++) {
    const item: unknown = items[i];
    const mapped = isObject(item)
      ? evaluationInputOf(withDefaults(body, item), `evaluations[${i}].`)
      : { ok: false as const, message: `evaluations[${i}] must be an object` };
    // A bad item is closed (false) and says why; the others are still decided.
    const result = mapped.ok
      ? decided(view, mapped.input, options.explain, timestamp)
      : { decision: false, context: { error: { status: 400, message: mapped.message } } };
    out.push(result);
    if (options.semantic === 'deny_on_first_deny' && !result.decision) break;
    if (options.semantic === 'permit_on_first_permit' && result.decision) break;
  }
  return { ok: true, body: { evaluations: out } };
}

// ---------------------------------------------------------------------------------------------
// Search

/** Results per page when the request sets no limit, and the largest limit accepted. */
export const DEFAULT_PAGE_LIMIT = 1000;
export const MAX_PAGE_LIMIT = 1000;
/**
 * Candidates one request evaluates at most: a page ends there (with a next_token) even when it holds
 * fewer results than its limit, so one search never holds the event loop for long (about 1 µs each).
 */
export const MAX_SCAN = 10_000;

interface PageToken {
  /** The last result of the previous page: this page starts after it. */
  readonly after: string;
  readonly limit: number;
  /** Fingerprint of the request the token belongs to. */
  readonly query: string;
}

const TOKEN_VERSION = 1;

/** The opaque page.next_token of a page token (versioned base64url JSON). */
export function encodeToken(t: PageToken): string {
  return Buffer.from(JSON.stringify([TOKEN_VERSION, t.after, t.limit, t.query]), 'utf8').toString('base64url');
}

/** The page token of a page.token this PDP issued, or undefined for anything else. */
export function decodeToken(text: string): PageToken | undefined {
  if (!/^[A-Za-z0-9_-]{1,8000}$/.test(text)) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 4 || v[0] !== TOKEN_VERSION) return undefined;
    const [, after, limit, query] = v as unknown[];
    if (
      typeof after !== 'string' ||
      typeof query !== 'string' ||
      typeof limit !== 'number' ||
      !Number.isInteger(limit) ||
      limit < 1 ||
      limit > MAX_PAGE_LIMIT
    )
      return undefined;
    return { after, limit, query };
  } catch {
    return undefined;
  }
}

/** Everything that must stay the same from page to page: the kind, the tenant and the entities. */
function fingerprint(kind: SearchKind, tenant: string, body: Record<string, unknown>): string {
  const query = canonicalJson({
    kind,
    tenant,
    subject: body['subject'],
    action: kind === 'action' ? undefined : body['action'],
    resource: body['resource'],
    context: body['context'],
  });
  return createHash('sha256').update(query).digest('base64url').slice(0, 22);
}

/** The page to answer: where it starts and how long it is, or what is wrong with `page`. */
function pageOf(body: Record<string, unknown>, query: string): { after: string | undefined; limit: number } | string {
  const page = body['page'];
  if (page === undefined) return { after: undefined, limit: DEFAULT_PAGE_LIMIT };
  if (!isObject(page)) return 'page must be an object';
  const limit = page['limit'];
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT)) {
    return `page.limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`;
  }
  const token = page['token'];
  if (token === undefined || token === '') return { after: undefined, limit: limit ?? DEFAULT_PAGE_LIMIT };
  if (typeof token !== 'string') return 'page.token must be a string';
  const t = decodeToken(token);
  if (!t) return 'page.token is not a token this PDP issued';
  if (t.query !== query)
    return 'page.token belongs to another search: subject, action, resource and context must stay the same from page to page';
  if (limit !== undefined && limit !== t.limit) return `page.limit must stay ${t.limit} from page to page (or be left out)`;
  return { after: t.after, limit: t.limit };
}

/** Index of the first item after `after` in a list sorted by code point. */
function startAfter(sorted: readonly string[], after: string | undefined): number {
  if (after === undefined) return 0;
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (codePointCompare(sorted[mid] as string, after) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The actions of the rules for a subject type and resource type, in code point order. */
export function actionsFor(index: RuleIndex, subjectType: unknown, resourceType: unknown): string[] {
  const names = new Set<string>();
  for (const r of index.rules) {
    if (r.model.subjectType === subjectType && r.model.resourceType === resourceType) for (const a of r.model.actions) names.add(a);
  }
  return [...names].sort(codePointCompare);
}

/** The candidates of a search, sorted, and the decision input for one of them. */
function candidatesOf(
  kind: SearchKind,
  parts: SearchParts,
  view: TenantView,
): { list: readonly string[]; input(candidate: string): DecisionInput | undefined } {
  const noAction = { name: '', properties: {} };
  const mapped = (
    principal: Record<string, unknown>,
    action: { name: string; properties: Record<string, unknown> },
    resource: Record<string, unknown>,
  ): DecisionInput | undefined => {
    const m = inputOf(principal, action, resource, parts.context);
    return m.ok ? m.input : undefined;
  };
  if (kind === 'subject') {
    return {
      list: view.directory.ids(parts.subject['type'] as string),
      input: (id) => mapped({ ...parts.subject, id }, parts.action ?? noAction, parts.resource),
    };
  }
  if (kind === 'resource') {
    return {
      list: view.directory.ids(parts.resource['type'] as string),
      input: (id) => mapped(parts.subject, parts.action ?? noAction, { ...parts.resource, id }),
    };
  }
  return {
    list: actionsFor(view.index, parts.subject['type'], parts.resource['type']),
    input: (name) => mapped(parts.subject, { name, properties: {} }, parts.resource),
  };
}

/**
 * POST /access/v1/search/{subject,resource,action}: the directory's entities of the requested type
 * (or the actions the tenant's rules name for the two types) that the request allows, in code
 * point order, a page at a time. `page.next_token` is "" on the last page; a page that checked
 * MAX_SCAN candidates ends there, perhaps with fewer results than its limit.
 */
export function search(kind: SearchKind, body: unknown, view: TenantView): Reply {
  if (!isObject(body)) return bad('the body must be a JSON object');
  const checked = searchPartsOf(body, kind);
  if (!checked.ok) return bad(checked.message);
  // A request that cannot be a decision input (nested past the input's limit) is so for every
  // candidate: a 400, as from the evaluation endpoint, not an empty page. Candidates only add a string.
  const { subject, action, resource, context } = checked.parts;
  const probe = inputOf(
    kind === 'subject' ? { ...subject, id: '' } : subject,
    action ?? { name: '', properties: {} },
    kind === 'resource' ? { ...resource, id: '' } : resource,
    context,
  );
  if (!probe.ok) return bad(probe.message);
  const query = fingerprint(kind, view.tenant, body);
  const page = pageOf(body, query);
  if (typeof page === 'string') return bad(page);
  const { list, input } = candidatesOf(kind, checked.parts, view);
  const found: string[] = [];
  /** Where the next page starts after, when there is one. */
  let resume: string | undefined;
  const first = startAfter(list, page.after);
  for (let i = first; i < list.length; i++) {
    const candidate = list[i] as string;
    if (i - first === MAX_SCAN) {
      resume = list[i - 1] as string;
      break;
    }
    const inp = input(candidate);
    if (!inp || !decide(view.index, inp, view.directory).allow) continue;
    if (found.length === page.limit) {
      resume = found[found.length - 1] as string;
      break;
    }
    found.push(candidate);
  }
  const next = resume === undefined ? '' : encodeToken({ after: resume, limit: page.limit, query });
  const results =
    kind === 'action'
      ? found.map((name) => ({ name }))
      : found.map((id) => ({ type: (kind === 'subject' ? checked.parts.subject : checked.parts.resource)['type'] as string, id }));
  return { ok: true, body: { page: { next_token: next }, results } };
}

// ---------------------------------------------------------------------------------------------
// Metadata

/**
 * GET /.well-known/authzen-configuration[/<tenant>]: the PDP identifier is the public base URL (or
 * the base URL and the tenant), and every endpoint lives under it.
 */
export function metadata(baseUrl: string, tenant?: string): Record<string, string> {
  const pdp = tenant === undefined ? baseUrl : `${baseUrl}/${tenant}`;
  const out: Record<string, string> = { policy_decision_point: pdp };
  for (const endpoint of AUTHZEN_ENDPOINT_NAMES) {
    const { path, metadataName } = AUTHZEN_ENDPOINTS[endpoint];
    out[metadataName] = `${pdp}${path}`;
  }
  return out;
}
