// Console sessions (docs/design/console.md, "Access"): a random 32-byte id in an HttpOnly cookie, the
// principal kept server-side in this replica's memory (port-forward pins a pod). A session ends after
// 30 minutes without a request or 8 hours after sign-in, whichever comes first. The clock and the random
// source are injected, so expiry is tested without waiting.

/** Who is signed in: a tenant (its API key: that tenant only) or an admin (all tenants). */
export type Principal =
  /** `keyHash`: the API key it signed in with, checked again on every request (a deleted key ends the session). */
  { readonly kind: 'tenant'; readonly tenant: string; readonly keyHash?: string } | { readonly kind: 'admin' };

/** One signed-in session, as the routes see it. */
export interface Session {
  readonly id: string;
  readonly principal: Principal;
  readonly createdAtMs: number;
  readonly lastSeenAtMs: number;
}

export interface SessionStore {
  /** A new session for a principal who just signed in; evicts the least recently used one when full. */
  create(principal: Principal): Session;
  /** The live session with this id, touched (its idle timeout starts again); undefined when unknown or expired. */
  get(id: string): Session | undefined;
  /** The live session with this id without touching it (a live-update stream must not keep a session awake). */
  peek(id: string): Session | undefined;
  /** Ends a session (sign-out); whether it existed. */
  destroy(id: string): boolean;
  /** How many sessions are held, expired ones not yet swept included. */
  size(): number;
}

export interface SessionOptions {
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /** `size` random bytes (crypto.randomBytes in the service). */
  readonly random: (size: number) => Uint8Array;
  readonly idleMs?: number;
  readonly absoluteMs?: number;
  readonly maxSessions?: number;
  /** Sessions one principal (a tenant, or the admins) holds at most; its least recently used goes first. */
  readonly maxPerPrincipal?: number;
}

export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_ABSOLUTE_MS = 8 * 60 * 60_000;
const MAX_SESSIONS = 1_000;
const MAX_PER_PRINCIPAL = 50;

function principalKey(p: Principal): string {
  return p.kind === 'admin' ? 'admin' : `tenant/${p.tenant}`;
}
const ID_BYTES = 32;
const ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A session store in memory, bounded to `maxSessions` (default 1,000). */
export function createSessionStore(options: SessionOptions): SessionStore {
  const idleMs = options.idleMs ?? SESSION_IDLE_MS;
  const absoluteMs = options.absoluteMs ?? SESSION_ABSOLUTE_MS;
  const maxSessions = options.maxSessions ?? MAX_SESSIONS;
  const maxPerPrincipal = options.maxPerPrincipal ?? MAX_PER_PRINCIPAL;
  // Insertion order is recency order: get() moves a session to the end, so the first is the least recently used.
  const sessions = new Map<string, Session>();

  const expired = (s: Session, now: number): boolean => now - s.lastSeenAtMs >= idleMs || now - s.createdAtMs >= absoluteMs;

  // One principal's sign-ins evict only its own sessions: a tenant's key signing in a thousand times
  // cannot sign the admin out.
  function makeRoomFor(principal: Principal): void {
    const key = principalKey(principal);
    const mine = [...sessions.values()].filter((s) => principalKey(s.principal) === key);
    for (const s of mine.slice(0, Math.max(0, mine.length - maxPerPrincipal + 1))) sessions.delete(s.id);
  }

  function makeRoom(now: number): void {
    if (sessions.size < maxSessions) return;
    for (const [id, s] of sessions) if (expired(s, now)) sessions.delete(id);
    while (sessions.size >= maxSessions) {
      const oldest = sessions.keys().next().value;
      if (oldest === undefined) break;
      sessions.delete(oldest);
    }
  }

  function newId(): string {
    const bytes = options.random(ID_BYTES);
    if (bytes.length !== ID_BYTES) throw new Error(`session ids need ${ID_BYTES} random bytes, the source gave ${bytes.length}`);
    const id = Buffer.from(bytes).toString('base64url');
    // Two equal draws of 256 bits mean the random source is broken: never hand out someone else's session.
    if (sessions.has(id)) throw new Error('the random source repeated a session id');
    return id;
  }

  return {
    create(principal) {
      const now = options.now();
      const id = newId();
      makeRoomFor(principal);
      makeRoom(now);
      const session: Session = { id, principal, createdAtMs: now, lastSeenAtMs: now };
      sessions.set(id, session);
      return session;
    },
    get(id) {
      if (!ID_PATTERN.test(id)) return undefined;
      const found = sessions.get(id);
      if (found === undefined) return undefined;
      const now = options.now();
      sessions.delete(id);
      if (expired(found, now)) return undefined;
      const touched: Session = { ...found, lastSeenAtMs: Math.max(found.lastSeenAtMs, now) };
      sessions.set(id, touched);
      return touched;
    },
    peek(id) {
      const found = ID_PATTERN.test(id) ? sessions.get(id) : undefined;
      return found !== undefined && !expired(found, options.now()) ? found : undefined;
    },
    destroy: (id) => sessions.delete(id),
    size: () => sessions.size,
  };
}

export const SESSION_COOKIE = 'acl_console';
const COOKIE_ATTRIBUTES = 'HttpOnly; SameSite=Strict; Path=/console';

/** The Set-Cookie value for a session: HttpOnly, SameSite=Strict, Path=/console, and Secure when served over TLS. */
export function sessionCookie(id: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; ${COOKIE_ATTRIBUTES}${secure ? '; Secure' : ''}`;
}

/** The Set-Cookie value that makes the browser forget the session (sign-out, expired session). */
export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; ${COOKIE_ATTRIBUTES}; Max-Age=0${secure ? '; Secure' : ''}`;
}

// RFC 6265 4.1.1: a cookie name is an HTTP token; a value is cookie-octets, optionally in double quotes.
const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const COOKIE_VALUE = /^(?:"([\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*)"|([\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*))$/;

/**
 * The cookies of a Cookie header, by name; malformed pairs (no "=", a bad name or value) are skipped, and
 * the first of two equal names wins (browsers send the most specific path first).
 */
export function parseCookies(header: string | undefined): ReadonlyMap<string, string> {
  const cookies = new Map<string, string>();
  if (header === undefined) return cookies;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const name = pair.slice(0, eq).trim();
    const value = COOKIE_VALUE.exec(pair.slice(eq + 1).trim());
    if (!COOKIE_NAME.test(name) || value === null || cookies.has(name)) continue;
    cookies.set(name, value[1] ?? value[2] ?? '');
  }
  return cookies;
}

/** The session id a request's Cookie header carries, if any. */
export function sessionIdOf(cookieHeader: string | undefined): string | undefined {
  return parseCookies(cookieHeader).get(SESSION_COOKIE);
}
