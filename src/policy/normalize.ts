// JSON documents made well-formed as OPA's decoder makes them, once, where they enter (requests,
// directory entities): every string and key well-formed, nesting bounded.
import type { Json } from './model.ts';

/**
 * Makes a decoded JSON document well-formed: every string and key has its unpaired UTF-16 surrogates
 * replaced by U+FFFD, as OPA's decoder does. Values that are already well-formed are returned as they are.
 * Anything that is not JSON (undefined, functions, NaN, Infinity) is reported by throwing a TypeError:
 * callers parse JSON, so this only happens on a programming error.
 */
export function normalizeInput(v: unknown): Json {
  // Nearly every document is already clean: return it as it is, without copying (the request path).
  return isCleanJson(v, 0) ? (v as Json) : normalizeCopy(v, 0);
}

/** Deeper documents are refused: no attribute path needs them, and recursion must stay bounded. */
export const MAX_DEPTH = 256;

/** JSON values only, every string and key well-formed, nesting within reason. */
function isCleanJson(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case 'string':
      return v.isWellFormed();
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object': {
      if (v === null) return true;
      if (depth > MAX_DEPTH) return false;
      if (Array.isArray(v)) {
        for (const x of v) if (!isCleanJson(x, depth + 1)) return false;
        return true;
      }
      if (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null) return false;
      for (const k in v) {
        if (!Object.hasOwn(v, k) || !k.isWellFormed() || !isCleanJson((v as Record<string, unknown>)[k], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function normalizeCopy(v: unknown, depth: number): Json {
  switch (typeof v) {
    case 'string':
      return v.isWellFormed() ? v : v.toWellFormed();
    case 'boolean':
      return v;
    case 'number':
      if (!Number.isFinite(v)) throw new TypeError('numbers must be finite');
      return v;
    case 'object': {
      if (v === null) return null;
      if (depth > MAX_DEPTH) throw new TypeError(`nesting deeper than ${MAX_DEPTH} levels`);
      if (Array.isArray(v)) return v.map((x) => normalizeCopy(x, depth + 1));
      const out: { [key: string]: Json } = {};
      for (const [k, x] of Object.entries(v)) {
        const key = k.isWellFormed() ? k : k.toWellFormed();
        // Two keys that differ only in lone surrogates collapse into one, as in OPA: the last one wins.
        Object.defineProperty(out, key, { value: normalizeCopy(x, depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof v}`);
  }
}
