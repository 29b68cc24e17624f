// The request shapes of POST /authorization (service spec 2.1) and of the AuthZEN 1.0 endpoints,
// and their one mapping onto the decision input OPA sees: {principal, action, resource, context,
// actionProperties} (docs/authzen.md). An entity's attributes are its `properties` object merged
// with any other fields it carries (those win), and `type` and `id` always come from the entity
// itself; an action's properties (and its other fields but `name`) become actionProperties.
// Unknown fields of the request itself are ignored.
//
// Checked by hand rather than with a zod schema: this runs on every decision, and a schema parse
// plus the copies it makes cost about 9 µs of a 25 µs budget (docs/benchmarks.md). It reports the
// first problem it finds; request.test.ts pins the messages.
import { toDecisionInput, type DecisionInput } from '../policy/index.ts';
import { isObject } from '../api/index.ts';

type Fields = Record<string, unknown>;
/** What is wrong with a request (a class, so no attribute of the request can pass for one). */
class Problem {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}
type Checked<T> = T | Problem;

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function text(owner: Fields, key: string, path: string, max: number): Checked<string> {
  const v = owner[key];
  if (v === undefined) return new Problem(`${path} is required`);
  if (typeof v !== 'string') return new Problem(`${path} must be a string`);
  if (v.length === 0) return new Problem(`${path}: must not be empty`);
  // Characters are code points (as in CEL's size() and the CRD's maxLength), not UTF-16 units.
  if (v.length > max && codePoints(v) > max) return new Problem(`${path}: must be at most ${max} characters`);
  return v;
}

/** Copies a key, even `__proto__` (JSON.parse makes it an own key), as a plain data property. */
function put(out: Fields, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** Whether an entity must carry an id: a search omits the id of the entity it searches for. */
type IdRule = 'required' | 'optional';

/**
 * An entity's attributes: its `properties`, then its other fields (those win), then `type` and
 * `id` (the entity's own). `value` is the entity as sent; `path` names it in messages.
 */
function entityOf(v: unknown, path: string, ids: IdRule = 'required'): Checked<Fields> {
  if (v === undefined) return new Problem(`${path} is required`);
  if (!isObject(v)) return new Problem(`${path} must be an object`);
  const type = text(v, 'type', `${path}.type`, 256);
  if (type instanceof Problem) return type;
  const id = ids === 'required' || v['id'] !== undefined ? text(v, 'id', `${path}.id`, 1024) : undefined;
  if (id instanceof Problem) return id;
  const properties = v['properties'];
  if (properties !== undefined && !isObject(properties)) return new Problem(`${path}.properties must be an object`);
  const out: Fields = {};
  if (properties !== undefined) for (const k in properties) if (Object.hasOwn(properties, k)) put(out, k, properties[k]);
  for (const k in v) if (Object.hasOwn(v, k) && k !== 'properties') put(out, k, v[k]);
  out['type'] = type;
  if (id === undefined) delete out['id'];
  else out['id'] = id;
  return out;
}

/** The properties of an action sent as a plain name: shared, never written to. */
const NO_PROPERTIES: Fields = Object.freeze({});

/** An action: its name, and its attributes (`properties`, then its other fields) as actionProperties. */
interface ActionOf {
  readonly name: string;
  readonly properties: Fields;
}

/** `action` as AuthZEN sends it, `{name, properties?}`; with `strings`, also the service spec's plain name. */
function actionOf(v: unknown, path: string, strings: boolean): Checked<ActionOf> {
  if (v === undefined) return new Problem(`${path} is required`);
  if (typeof v === 'string' && strings) {
    // The service spec's shape, on every POST /authorization: checked in place, no object made.
    if (v.length === 0) return new Problem(`${path}: must not be empty`);
    if (v.length > 256 && codePoints(v) > 256) return new Problem(`${path}: must be at most 256 characters`);
    return { name: v, properties: NO_PROPERTIES };
  }
  if (!isObject(v)) return new Problem(strings ? `${path} must be a string or an object {name, properties}` : `${path} must be an object`);
  const name = text(v, 'name', `${path}.name`, 256);
  if (name instanceof Problem) return name;
  const properties = v['properties'];
  if (properties !== undefined && !isObject(properties)) return new Problem(`${path}.properties must be an object`);
  const out: Fields = {};
  if (properties !== undefined) for (const k in properties) if (Object.hasOwn(properties, k)) put(out, k, properties[k]);
  for (const k in v) if (Object.hasOwn(v, k) && k !== 'properties' && k !== 'name') put(out, k, v[k]);
  return { name, properties: out };
}

function contextOf(v: unknown, path: string): Checked<Fields> {
  if (v === undefined) return {};
  return isObject(v) ? v : new Problem(`${path} must be an object`);
}

export type Mapped = { ok: true; input: DecisionInput } | { ok: false; message: string };

/** The decision input of checked parts (normalised: lone surrogates become U+FFFD). */
export function inputOf(principal: Fields, action: ActionOf, resource: Fields, context: Fields): Mapped {
  const input = toDecisionInput({ principal, action: action.name, resource, context, actionProperties: action.properties });
  return typeof input === 'string' ? { ok: false, message: input } : { ok: true, input };
}

function fail(p: Problem): { ok: false; message: string } {
  return { ok: false, message: p.message };
}

/**
 * POST /authorization (service spec 2.1): checks a parsed body and maps it onto a decision input,
 * or says what is wrong. `action` is a name, as the spec says, or (beyond it) an AuthZEN action
 * object whose properties a condition reads as actionProperties.
 */
export function decisionInputOf(body: unknown): Mapped {
  if (!isObject(body)) return { ok: false, message: 'the body must be a JSON object' };
  const principal = entityOf(body['subject'], 'subject');
  if (principal instanceof Problem) return fail(principal);
  const resource = entityOf(body['resource'], 'resource');
  if (resource instanceof Problem) return fail(resource);
  const action = actionOf(body['action'], 'action', true);
  if (action instanceof Problem) return fail(action);
  const context = contextOf(body['context'], 'context');
  if (context instanceof Problem) return fail(context);
  return inputOf(principal, action, resource, context);
}

/**
 * An AuthZEN 1.0 access evaluation `{subject, action, resource, context?}`, checked in that order;
 * `path` prefixes messages (e.g. "evaluations[2]."). Unknown fields are ignored.
 */
export function evaluationInputOf(body: unknown, path = ''): Mapped {
  if (!isObject(body)) return { ok: false, message: path ? `${path.slice(0, -1)} must be an object` : 'the body must be a JSON object' };
  const principal = entityOf(body['subject'], `${path}subject`);
  if (principal instanceof Problem) return fail(principal);
  const action = actionOf(body['action'], `${path}action`, false);
  if (action instanceof Problem) return fail(action);
  const resource = entityOf(body['resource'], `${path}resource`);
  if (resource instanceof Problem) return fail(resource);
  const context = contextOf(body['context'], `${path}context`);
  if (context instanceof Problem) return fail(context);
  const mapped = inputOf(principal, action, resource, context);
  // A batch item's message says which item, whatever the problem.
  return mapped.ok || path === '' ? mapped : { ok: false, message: `${path.slice(0, -1)}: ${mapped.message}` };
}

/** The checked parts of a search request: the searched entity has a type and perhaps no id. */
export interface SearchParts {
  readonly subject: Fields;
  /** Absent in an action search. */
  readonly action: ActionOf | undefined;
  readonly resource: Fields;
  readonly context: Fields;
}

export type SearchKind = 'subject' | 'resource' | 'action';

/**
 * An AuthZEN search request: subject search needs subject.type, action and a whole resource;
 * resource search a whole subject, action and resource.type; action search a whole subject and
 * resource (any action sent is ignored). The searched entity's id, when sent, is ignored.
 */
export function searchPartsOf(body: unknown, kind: SearchKind): { ok: true; parts: SearchParts } | { ok: false; message: string } {
  if (!isObject(body)) return { ok: false, message: 'the body must be a JSON object' };
  const subject = entityOf(body['subject'], 'subject', kind === 'subject' ? 'optional' : 'required');
  if (subject instanceof Problem) return fail(subject);
  const action = kind === 'action' ? undefined : actionOf(body['action'], 'action', false);
  if (action instanceof Problem) return fail(action);
  const resource = entityOf(body['resource'], 'resource', kind === 'resource' ? 'optional' : 'required');
  if (resource instanceof Problem) return fail(resource);
  const context = contextOf(body['context'], 'context');
  if (context instanceof Problem) return fail(context);
  if (kind === 'subject') delete subject['id'];
  if (kind === 'resource') delete resource['id'];
  return { ok: true, parts: { subject, action, resource, context } };
}

/** A decision input's entity, as the log holds it: attributes already merged; checked as a request's entity is. */
function loggedEntity(v: unknown, path: string): Checked<Fields> {
  if (!isObject(v)) return new Problem(`${path} must be an object`);
  const type = text(v, 'type', `${path}.type`, 256);
  if (type instanceof Problem) return type;
  const id = text(v, 'id', `${path}.id`, 1024);
  return id instanceof Problem ? id : v;
}

/**
 * A decision input as the decision log records it (`{principal, action, resource, context,
 * actionProperties}`, attributes merged), checked as POST /authorization checks the request it came
 * from: the same limits (types and action at most 256 characters, ids at most 1,024, none empty) and
 * the same normalisation, so `acl-operator replay` decides exactly what the API would have decided,
 * and an input the API would have refused is named as such. Attributes are kept as they are: a logged
 * attribute called `properties` is an attribute, not a request's properties to merge again.
 */
export function loggedInputOf(logged: unknown): Mapped {
  if (!isObject(logged)) return { ok: false, message: 'the input must be a JSON object' };
  const principal = loggedEntity(logged['principal'], 'principal');
  if (principal instanceof Problem) return fail(principal);
  const resource = loggedEntity(logged['resource'], 'resource');
  if (resource instanceof Problem) return fail(resource);
  if (typeof logged['action'] !== 'string') return { ok: false, message: 'action must be a string' };
  const action = actionOf(logged['action'], 'action', true);
  if (action instanceof Problem) return fail(action);
  const context = contextOf(logged['context'], 'context');
  if (context instanceof Problem) return fail(context);
  const properties = contextOf(logged['actionProperties'], 'actionProperties');
  if (properties instanceof Problem) return fail(properties);
  return inputOf(principal, { name: action.name, properties }, resource, context);
}
