// Runtime semantics of condition values: the error value, equality, ordering, size and `in` (IP
// addresses: ip.ts; timestamps: timestamps.ts). Each function states the CEL rule it implements;
// rego.ts emits Rego with the same meaning.
import type { Json } from './model.ts';

/** The error value: a missing attribute, or an operator applied to types it does not accept. */
export const ERR: unique symbol = Symbol('error');
export type Err = typeof ERR;
export type Result = Json | Err;

export type JsonMap = { readonly [key: string]: Json };

export function isMap(v: Json): v is JsonMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** CEL `==`: values of different types are unequal; numbers compare by value; lists and maps by structure. */
export function celEquals(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!celEquals(a[i] as Json, b[i] as Json)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const am = a as JsonMap;
  const bm = b as JsonMap;
  const keys = Object.keys(am);
  if (keys.length !== Object.keys(bm).length) return false;
  for (const k of keys) {
    if (!Object.hasOwn(bm, k) || !celEquals(am[k] as Json, bm[k] as Json)) return false;
  }
  return true;
}

/**
 * Orders two strings by Unicode code point (CEL and OPA), not by UTF-16 code unit (JavaScript's `<`).
 * The orders differ only where a surrogate meets a unit in U+E000–U+FFFF, so only the first differing
 * unit needs the fix-up.
 */
export function codePointCompare(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** CEL ordering: defined between two numbers, two strings or two booleans (false < true); else an error. */
export function celCompare(a: Json, b: Json): number | Err {
  const t = typeof a;
  if (t !== typeof b) return ERR;
  if (t === 'number') return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  if (t === 'string') return codePointCompare(a as string, b as string);
  if (t === 'boolean') return a === b ? 0 : a ? 1 : -1;
  return ERR;
}

/** Number of code points in a well-formed string. */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      n--;
      i++;
    }
  }
  return n;
}

/** CEL `size`: code points of a string, elements of a list, entries of a map; else an error. */
export function celSize(v: Json): number | Err {
  if (typeof v === 'string') return codePointLength(v);
  if (Array.isArray(v)) return v.length;
  if (isMap(v)) return Object.keys(v).length;
  return ERR;
}

/**
 * CEL `in`: an element of a list (by `==`), or a key of a map. A key whose value is null still
 * counts. Map keys are strings, so a number or boolean is never one; null, a list or a map cannot be
 * a key at all, which is an error (as in the CEL library).
 */
export function celIn(element: Json, collection: Json): boolean | Err {
  if (Array.isArray(collection)) {
    for (const item of collection) if (celEquals(element, item as Json)) return true;
    return false;
  }
  if (isMap(collection)) {
    if (typeof element === 'string') return Object.hasOwn(collection, element);
    return typeof element === 'number' || typeof element === 'boolean' ? false : ERR;
  }
  return ERR;
}
