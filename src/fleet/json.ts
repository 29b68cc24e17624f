// JSON for the decision log: uploads parsed without losing a number, credentials redacted before a
// line is written, and a cheap size bound for what the recent-decisions buffer keeps.
import { TOKEN_PREFIX } from '../auth/index.ts';

/** A number token (after a JSON delimiter) that a double may not hold as written: 16+ digits, or an exponent. */
const MAYBE_INEXACT = /[:,[]\s*-?[0-9][0-9.]{15,}|[:,[]\s*-?[0-9][0-9.]*[eE]/;

interface ReviverContext {
  readonly source?: string;
}

/** A number kept as its source text: JSON.stringify writes `rawJSON` as it is. */
export interface RawJson {
  readonly rawJSON: string;
}
/** JSON.rawJSON and JSON.isRawJSON: in V8 (Node 21 and later), not yet in TypeScript's es2024 lib. */
const RAW = JSON as JSON & { rawJSON(text: string): RawJson; isRawJSON(v: unknown): v is RawJson };

/**
 * Parses JSON, keeping every number's text when a double would change it
 * (`9007199254740993`, `0.30000000000000001`): such numbers become JSON.rawJSON values, which
 * JSON.stringify writes back as they came. A decision log records what OPA saw, exactly.
 */
export function parseLosslessJson(text: string): unknown {
  return MAYBE_INEXACT.test(text) ? parseKeepingNumbers(text) : JSON.parse(text);
}

/**
 * parseLosslessJson for a text known to hold a number a double may change (the uploads thread's
 * scan tells: fleet/scan.ts), without looking for one again.
 */
export function parseKeepingNumbers(text: string): unknown {
  try {
    return JSON.parse(text, function keep(this: unknown, _key: string, v: unknown, context?: ReviverContext): unknown {
      // Any text other than the double's own shortest form is kept as written ("1.0" too: harmless).
      return typeof v === 'number' && context?.source !== undefined && String(v) !== context.source ? RAW.rawJSON(context.source) : v;
    } as (this: unknown, key: string, value: unknown) => unknown);
  } catch (err) {
    // V8 applies a reviver recursively: thousands of levels exhaust the stack. Say so, rather than
    // keep the upload with its numbers rounded.
    if (err instanceof RangeError)
      throw new SyntaxError('it nests too deeply (thousands of levels) to keep its numbers exactly as written');
    throw err;
  }
}

/** Deepest level a decision line is read (and written) to. */
const DEPTH = 256;

/**
 * Keys whose values are credentials wherever they appear, in any case: HTTP headers in Envoy and
 * gateway inputs, and the usual names of tokens, keys and passwords in JSON bodies.
 */
const SECRET_KEYS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'x-auth-token',
  'x-amz-security-token',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'api_key',
  'api-key',
  'apikey',
  'password',
  'passwd',
  'secret',
  'client_secret',
]);
/** By length, whether a secret key has it: an array index, cheaper than a second Set lookup per key. */
const SECRET_LENGTH: boolean[] = [];
for (const k of SECRET_KEYS) SECRET_LENGTH[k.length] = true;
/** Whether a key names a credential, in any case (the length first: most keys are never lower-cased). */
const isSecretKey = (k: string): boolean => SECRET_LENGTH[k.length] === true && SECRET_KEYS.has(k.toLowerCase());
/** Our connector tokens, wherever they appear in a string (a key too). */
const AGENT_TOKEN = new RegExp(`${TOKEN_PREFIX}[A-Za-z0-9_-]{43}`);
const AGENT_TOKENS = new RegExp(AGENT_TOKEN.source, 'g');
const hasAgentToken = (text: string): boolean => text.includes(TOKEN_PREFIX) && AGENT_TOKEN.test(text);
/** An HTTP bearer credential inside a string (`Bearer eyJ…`, 8 characters or more), in any case. */
const BEARER = /\bbearer[ \t]+[A-Za-z0-9._~+/-]{8,}=*/i;
const BEARERS = new RegExp(BEARER.source, 'gi');
/** Whether a string holds a credential we recognise: a connector token or a bearer credential. */
const secretIn = (text: string): boolean => hasAgentToken(text) || (text.length > 7 && BEARER.test(text));
const withoutSecrets = (text: string): string => text.replace(AGENT_TOKENS, REDACTED).replace(BEARERS, `Bearer ${REDACTED}`);
export const REDACTED = '[redacted]';

/** What stands for a subtree deeper than DEPTH in a decision line: it is not read for secrets, so not written. */
export const TOO_DEEP = `[not logged: nested deeper than ${DEPTH} levels]`;

function needsRedaction(v: unknown, depth: number): boolean {
  if (typeof v === 'string') return secretIn(v);
  if (typeof v !== 'object' || v === null) return false;
  if (depth > DEPTH) return true;
  if (Array.isArray(v)) {
    for (const x of v) if (needsRedaction(x, depth + 1)) return true;
    return false;
  }
  if (RAW.isRawJSON(v)) return false;
  for (const k in v) {
    if (isSecretKey(k) || hasAgentToken(k)) return true;
    if (needsRedaction((v as Record<string, unknown>)[k], depth + 1)) return true;
  }
  return false;
}

function redactCopy(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return withoutSecrets(v);
  if (typeof v !== 'object' || v === null || RAW.isRawJSON(v)) return v;
  if (depth > DEPTH) return TOO_DEEP;
  if (Array.isArray(v)) return v.map((x) => redactCopy(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const k in v) {
    const value = isSecretKey(k) ? REDACTED : redactCopy((v as Record<string, unknown>)[k], depth + 1);
    // A key that is a token is renamed (two such keys of one object become one).
    const key = hasAgentToken(k) ? k.replace(AGENT_TOKENS, REDACTED) : k;
    if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
  }
  return out;
}

/**
 * The value with credentials replaced by "[redacted]": values under authorization, cookie and
 * similar keys (any case), and connector tokens (`agent_…`) inside strings; a subtree deeper than
 * 256 levels is replaced by TOO_DEEP. The same object when there is nothing to redact (the common
 * case: no copy).
 */
export function redact<T>(v: T): T | unknown {
  return needsRedaction(v, 0) ? redactCopy(v, 0) : v;
}

/**
 * An estimate of a value's JSON size in bytes that stops counting past `limit` (it then returns a
 * number above it): what the recent-decisions buffer uses to decide whether to keep an input.
 */
export function jsonSizeAtMost(v: unknown, limit: number): number {
  let size = 0;
  const walk = (x: unknown, depth: number): void => {
    if (size > limit) return;
    switch (typeof x) {
      case 'string':
        size += x.length + 2;
        return;
      case 'number':
        size += 8;
        return;
      case 'boolean':
        size += 5;
        return;
      case 'object': {
        if (x === null) {
          size += 4;
          return;
        }
        if (depth > DEPTH) {
          size = limit + 1;
          return;
        }
        if (RAW.isRawJSON(x)) {
          size += x.rawJSON.length;
          return;
        }
        size += 2;
        if (Array.isArray(x)) {
          for (const e of x) {
            size += 1;
            walk(e, depth + 1);
            if (size > limit) return;
          }
          return;
        }
        for (const k in x) {
          size += k.length + 4;
          walk((x as Record<string, unknown>)[k], depth + 1);
          if (size > limit) return;
        }
        return;
      }
      default:
        return;
    }
  };
  walk(v, 0);
  return size;
}

/** Largest input or result (JSON bytes, estimated) the recent-decisions buffer keeps. */
export const MAX_KEPT_BYTES = 4096;

const NOT_KEPT = `[not kept here: larger than ${MAX_KEPT_BYTES} bytes; the decision log has it whole]`;

/** What the recent-decisions buffer keeps of a value, and its estimated JSON size: the value, or a note in its place when larger than MAX_KEPT_BYTES. */
export function keptWithSize(v: unknown): { readonly value: unknown; readonly bytes: number } {
  const bytes = jsonSizeAtMost(v, MAX_KEPT_BYTES);
  return bytes <= MAX_KEPT_BYTES ? { value: v, bytes } : { value: NOT_KEPT, bytes: NOT_KEPT.length + 2 };
}

/** The value, or a note in its place when it is larger than MAX_KEPT_BYTES: what the recent-decisions buffer keeps. */
export const keptForRecent = (v: unknown): unknown => keptWithSize(v).value;
