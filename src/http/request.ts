// The request shape of POST /authorization (service spec 2.1) and its mapping onto the decision
// input OPA sees: {principal, action, resource, context}. An entity's attributes are its
// `properties` object merged with any other top-level fields (those win), and `type` and `id`
// always come from the entity itself. Unknown fields are kept as attributes, never refused.
//
// Checked by hand rather than with a zod schema: this runs on every decision, and a schema parse
// plus the copies it makes cost about 9 µs of a 25 µs budget (docs/benchmarks.md). It accepts what
// the schema accepted and reports the first problem it finds (in the order subject, resource,
// action, context); request.test.ts pins the messages.
import { toDecisionInput, type DecisionInput } from '../policy/index.ts';

type Fields = Record<string, unknown>;
/** What is wrong with a request (a class, so no attribute of the request can pass for one). */
class Problem {
  readonly message: string;
  constructor(message: string) { this.message = message; }
}
type Checked<T> = T | Problem;

function isObject(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

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

function entity(body: Fields, name: string): Checked<Fields> {
  const v = body[name];
  if (v === undefined) return new Problem(`${name} is required`);
  if (!isObject(v)) return new Problem(`${name} must be an object`);
  const type = text(v, 'type', `${name}.type`, 256);
  if (type instanceof Problem) return type;
  const id = text(v, 'id', `${name}.id`, 1024);
  if (id instanceof Problem) return id;
  const properties = v['properties'];
  if (properties !== undefined && !isObject(properties)) return new Problem(`${name}.properties must be an object`);
  const out: Fields = {};
  if (properties !== undefined) for (const k in properties) if (Object.hasOwn(properties, k)) put(out, k, properties[k]);
  for (const k in v) if (Object.hasOwn(v, k) && k !== 'properties') put(out, k, v[k]);
  out['type'] = type;
  out['id'] = id;
  return out;
}

/** Checks a parsed body and maps it onto a decision input, or says what is wrong. */
export function decisionInputOf(body: unknown): { ok: true; input: DecisionInput } | { ok: false; message: string } {
  if (!isObject(body)) return { ok: false, message: 'the body must be a JSON object' };
  const principal = entity(body, 'subject');
  if (principal instanceof Problem) return { ok: false, message: principal.message };
  const resource = entity(body, 'resource');
  if (resource instanceof Problem) return { ok: false, message: resource.message };
  const action = text(body, 'action', 'action', 256);
  if (action instanceof Problem) return { ok: false, message: action.message };
  const context = body['context'] ?? {};
  if (!isObject(context) || body['context'] === null) return { ok: false, message: 'context must be an object' };
  const input = toDecisionInput({ principal, action, resource, context });
  return typeof input === 'string' ? { ok: false, message: input } : { ok: true, input };
}
