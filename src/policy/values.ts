// Runtime semantics of condition values: equality, ordering, size, IP addresses and timestamps.
// Each function states the CEL rule it implements; rego.ts emits Rego with the same meaning.
import type { Cidr, Json } from './model.ts';

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

// ---------------------------------------------------------------------------------------------
// IP addresses, with the rules of Go's net.ParseIP (which OPA's net.cidr_contains uses): dotted
// decimal IPv4 without leading zeros; IPv6 in RFC 4291 text form, with an optional IPv4 tail and
// no zone. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address.

export interface IpAddress {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

function parseIpv4Bytes(s: string): Uint8Array | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i] as string;
    if (!/^[0-9]{1,3}$/.test(p) || (p.length > 1 && p[0] === '0')) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseIpv6Bytes(s: string): Uint8Array | undefined {
  const out = new Uint8Array(16);
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (text: string): number[] | undefined => {
    if (text === '') return [];
    const res: number[] = [];
    const fields = text.split(':');
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i] as string;
      if (i === fields.length - 1 && f.includes('.')) {
        const v4 = parseIpv4Bytes(f);
        if (!v4) return undefined;
        res.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
        continue;
      }
      if (!/^[0-9A-Fa-f]{1,4}$/.test(f)) return undefined;
      res.push(parseInt(f, 16));
    }
    return res;
  };
  const head = groups(halves[0] as string);
  const tail = halves.length === 2 ? groups(halves[1] as string) : [];
  if (!head || !tail) return undefined;
  // An IPv4 tail is only allowed at the very end of the address.
  if (halves.length === 2 && (halves[0] as string).includes('.')) return undefined;
  const count = head.length + tail.length;
  if (halves.length === 1 ? count !== 8 : count > 7) return undefined;
  const all = [...head, ...new Array<number>(8 - count).fill(0), ...tail];
  all.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

const HEX = '[0-9A-Fa-f]{1,4}';
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])';
const IPV4 = `${OCTET}(\\.${OCTET}){3}`;

/** An IPv6 address in RFC 4291 text: 8 groups, or fewer around one `::` standing for at least one. */
function ipv6Pattern(): string {
  const groups = (n: number): string => (n === 0 ? '' : n === 1 ? HEX : `(${HEX}:){${n - 1}}${HEX}`);
  const upTo = (n: number): string => (n === 0 ? '' : `((${HEX}:){0,${n - 1}}${HEX})?`);
  const alternatives = [`(${HEX}:){7}${HEX}`, `(${HEX}:){6}${IPV4}`];
  for (let head = 0; head <= 7; head++) alternatives.push(`${groups(head)}::${upTo(7 - head)}`);
  for (let head = 0; head <= 5; head++) alternatives.push(`${groups(head)}::(${HEX}:){0,${5 - head}}${IPV4}`);
  return alternatives.map((a) => `(${a})`).join('|');
}

/**
 * What Go's net.ParseIP accepts, as one regular expression valid in both JavaScript and Go's RE2:
 * rego.ts guards net.cidr_contains with it, so OPA never sees a string it cannot parse (which would
 * be a builtin error), and parseIp below checks it first, so both sides accept the same strings.
 */
export const IP_PATTERN = `^((${IPV4})|${ipv6Pattern()})$`;
const IP_RE = new RegExp(IP_PATTERN);

/** Parses an IP address as Go's net.ParseIP does; undefined when it is not one. */
export function parseIp(s: string): IpAddress | undefined {
  if (!IP_RE.test(s)) return undefined;
  if (s.includes(':')) {
    const b = parseIpv6Bytes(s);
    if (!b) return undefined;
    return isV4Mapped(b) ? { family: 4, bytes: b.slice(12) } : { family: 6, bytes: b };
  }
  const b = parseIpv4Bytes(s);
  return b ? { family: 4, bytes: b } : undefined;
}

/** Parses a CIDR block ("10.0.0.0/8", "2001:db8::/32") into canonical form; undefined when invalid. */
export function parseCidr(s: string): Cidr | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const addrText = s.slice(0, slash);
  const prefixText = s.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined;
  // A mapped address written in IPv6 form stays an IPv6 network here (Go keeps 16 bytes for it).
  const family: 4 | 6 = addrText.includes(':') ? 6 : 4;
  const raw = family === 6 ? parseIpv6Bytes(addrText) : parseIpv4Bytes(addrText);
  const prefix = Number(prefixText);
  if (!raw || prefix > raw.length * 8) return undefined;
  if (family === 6 && isV4Mapped(raw)) return undefined; // ambiguous in Go; rejected so both sides agree
  const bytes = raw.map((byte, i) => {
    const bits = Math.max(0, Math.min(8, prefix - i * 8));
    return byte & ((0xff << (8 - bits)) & 0xff);
  });
  return { text: `${formatIp(family, bytes)}/${prefix}`, family, bytes, prefix };
}

function formatIp(family: 4 | 6, b: Uint8Array): string {
  if (family === 4) return Array.from(b).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((b[i] as number) << 8) | (b[i + 1] as number)).toString(16));
  return groups.join(':');
}

/** Whether a CIDR block contains an address; addresses of the other family are never contained. */
export function cidrContains(c: Cidr, ip: IpAddress): boolean {
  if (c.family !== ip.family) return false;
  for (let bit = 0; bit < c.prefix; bit += 8) {
    const i = bit / 8;
    const bits = Math.min(8, c.prefix - bit);
    const mask = (0xff << (8 - bits)) & 0xff;
    if (((ip.bytes[i] as number) & mask) !== c.bytes[i]) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Timestamps: the strict RFC 3339 profile YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM), upper-case T and
// Z, a day that exists, and a year from 1678 to 2261: every such instant fits OPA's int64 nanoseconds
// (1677-09-21 to 2262-04-11), so time.parse_rfc3339_ns never raises an error on what the pattern lets
// through. rego.ts guards it with the same pattern.

const YEAR = '(16(7[89]|[89][0-9])|1[7-9][0-9]{2}|2[01][0-9]{2}|22[0-5][0-9]|226[01])';
// Leap years from 1678 to 2261: divisible by 4, except 1700, 1800, 1900, 2100 and 2200.
const LEAP_YEAR = '(16(8[048]|9[26])|(1[7-9]|2[01])(0[48]|[2468][048]|[13579][26])|2000|22(0[48]|[135][26]|[24][048]|60))';
const MONTH_DAY = '((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))';

/** The timestamp pattern, written once for both JavaScript and Go's RE2 (rego.ts embeds it). */
export const TIMESTAMP_PATTERN = `^(${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`;
const TIMESTAMP_RE = new RegExp(TIMESTAMP_PATTERN);

/** Milliseconds since the epoch (UTC, whole seconds) of a timestamp in the strict profile; undefined when invalid. */
export function parseTimestamp(s: string): number | undefined {
  if (!TIMESTAMP_RE.test(s)) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(Number(s.slice(0, 4)), Number(s.slice(5, 7)) - 1, Number(s.slice(8, 10)));
  date.setUTCHours(Number(s.slice(11, 13)), Number(s.slice(14, 16)), Number(s.slice(17, 19)), 0);
  // A fraction of a second cannot move the hour, minute or weekday, so it is skipped.
  const rest = s.slice(19).replace(/^\.[0-9]+/, '');
  let offsetMs = 0;
  if (rest !== 'Z') {
    const sign = rest[0] === '-' ? -1 : 1;
    offsetMs = sign * (Number(rest.slice(1, 3)) * 60 + Number(rest.slice(4, 6))) * 60_000;
  }
  return date.getTime() - offsetMs;
}
