// CSRF protection for the console's actions (docs/design/console.md, "Access"): every form carries a token
// derived from the session id, and every state-changing request must also come from our own origin.
// Either check alone would do against today's browsers; both together cover a browser without one of them.
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface Csrf {
  /** The token the session's forms carry (base64url of HMAC-SHA256 over the session id). */
  token(sessionId: string): string;
  /** Whether a presented token is the session's, compared in constant time. */
  verify(sessionId: string, presented: string | undefined): boolean;
}

const MIN_SECRET_BYTES = 32;
// Domain separation: the same process secret may one day key another HMAC.
const LABEL = 'acl-operator console csrf v1\0';

/** CSRF tokens keyed by a process secret of at least 32 random bytes (drawn once at start). */
export function createCsrf(secret: Uint8Array): Csrf {
  if (secret.length < MIN_SECRET_BYTES)
    throw new Error(`the CSRF secret needs at least ${MIN_SECRET_BYTES} bytes, it has ${secret.length}`);
  const key = Buffer.from(secret);
  const mac = (sessionId: string): Buffer => createHmac('sha256', key).update(LABEL).update(sessionId).digest();
  return {
    token: (sessionId) => mac(sessionId).toString('base64url'),
    verify(sessionId, presented) {
      if (presented === undefined || !/^[A-Za-z0-9_-]{43}$/.test(presented)) return false;
      const given = Buffer.from(presented, 'base64url');
      const expected = mac(sessionId);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}

/** Request headers as node:http gives them: lower-case names, repeated ones possibly as arrays. */
export type RequestHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

function single(headers: RequestHeaders, name: string): string | undefined {
  const value = headers[name];
  // A repeated Origin, Sec-Fetch-Site or Referer is not something a browser sends: no answer from it.
  return typeof value === 'string' ? value : undefined;
}

// RFC 9110 7.2 and RFC 3986 3.2.2: a Host is `uri-host [ ":" port ]`, made of these characters only. A
// '/', '?', '#', '@' or backslash would make the URL parser read a path, a query or a user out of it instead.
const HOST_CHARACTERS = /^[A-Za-z0-9\-._~%!$&'()*+,;=:[\]]+$/;

/**
 * The origin a request's Host header names (`http://<host>`), or undefined when it is absent or not a
 * host with an optional port (`a b`, `[::1`, `%`, `a:99999`): the origin a same-origin check compares with.
 */
export function hostOrigin(host: string | undefined): string | undefined {
  if (host === undefined || !HOST_CHARACTERS.test(host) || !URL.canParse(`http://${host}`)) return undefined;
  return new URL(`http://${host}`).origin;
}

function originOf(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).origin : undefined;
}

/**
 * Whether a state-changing request comes from a page of `expectedOrigin` (e.g. "http://127.0.0.1:8080"):
 * the Origin header when it names an origin, else Sec-Fetch-Site, else the Referer's origin. Refused when
 * none of them says same-origin. `Origin: null` names no origin: our own pages send it, because the
 * console once had Referrer-Policy no-referrer (Fetch: "serializing a request origin"), and so does a
 * sandboxed frame; the browser's Sec-Fetch-Site then tells the two apart.
 */
export function sameOrigin(headers: RequestHeaders, expectedOrigin: string): boolean {
  const expected = originOf(expectedOrigin);
  if (expected === undefined || expected === 'null') throw new Error(`not an origin: ${JSON.stringify(expectedOrigin)}`);
  const origin = single(headers, 'origin');
  if (origin !== undefined && origin !== 'null') return origin === expected;
  const site = single(headers, 'sec-fetch-site');
  if (site !== undefined) return site === 'same-origin';
  const referer = single(headers, 'referer');
  return referer !== undefined && originOf(referer) === expected;
}
