import { describe, expect, it } from 'vitest';
import {
  clearedSessionCookie,
  createSessionStore,
  type Principal,
  parseCookies,
  type SessionOptions,
  sessionCookie,
  sessionIdOf,
} from './session.ts';

const MINUTE = 60_000;
const acme: Principal = { kind: 'tenant', tenant: 'acme' };

/** A store on a clock the test moves, with random bytes counting up from 1 (so each id differs). */
function storeAt(extra: Partial<SessionOptions> = {}) {
  let nowMs = 1_000_000;
  let draw = 0;
  const store = createSessionStore({
    now: () => nowMs,
    random: (size) => new Uint8Array(size).fill(++draw),
    ...extra,
  });
  return { store, advance: (ms: number) => (nowMs += ms) };
}

describe('console sessions', () => {
  it('get a 32-byte base64url id from the random source and keep the principal', () => {
    const { store } = storeAt();
    const session = store.create(acme);
    expect(session.id).toBe(Buffer.from(new Uint8Array(32).fill(1)).toString('base64url'));
    expect(session.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(store.get(session.id)?.principal).toEqual(acme);
    expect(store.get(store.create({ kind: 'admin' }).id)?.principal).toEqual({ kind: 'admin' });
  });

  it('end after 30 minutes without a request, and each request starts the 30 minutes again', () => {
    const { store, advance } = storeAt();
    const { id } = store.create(acme);
    advance(29 * MINUTE);
    expect(store.get(id)).toBeDefined();
    advance(29 * MINUTE);
    expect(store.get(id)).toBeDefined();
    advance(30 * MINUTE);
    expect(store.get(id)).toBeUndefined();
    expect(store.size()).toBe(0);
  });

  it('end 8 hours after sign-in however busy', () => {
    const { store, advance } = storeAt();
    const { id } = store.create(acme);
    for (let i = 0; i < 31; i++) {
      advance(15 * MINUTE);
      expect(store.get(id), `after ${(i + 1) * 15} minutes`).toBeDefined();
    }
    advance(15 * MINUTE);
    expect(store.get(id)).toBeUndefined();
  });

  it('end at sign-out', () => {
    const { store } = storeAt();
    const { id } = store.create(acme);
    expect(store.destroy(id)).toBe(true);
    expect(store.get(id)).toBeUndefined();
    expect(store.destroy(id)).toBe(false);
  });

  it('know no id they did not hand out', () => {
    const { store } = storeAt();
    store.create(acme);
    expect(store.get('')).toBeUndefined();
    expect(store.get('x'.repeat(43))).toBeUndefined();
    expect(store.get('__proto__')).toBeUndefined();
  });

  it('stay bounded, dropping expired sessions first and then the least recently used', () => {
    const { store, advance } = storeAt({ maxSessions: 3 });
    const a = store.create(acme);
    const b = store.create(acme);
    const c = store.create(acme);
    advance(MINUTE);
    store.get(a.id);
    const d = store.create(acme);
    expect(store.size()).toBe(3);
    expect(store.get(b.id)).toBeUndefined();
    expect([a, c, d].map((s) => store.get(s.id)?.id)).toEqual([a.id, c.id, d.id]);
    advance(29 * MINUTE);
    store.get(d.id);
    advance(2 * MINUTE);
    store.create(acme);
    expect(store.size()).toBe(2);
  });

  it('refuse a random source that repeats itself or gives too few bytes', () => {
    const same = createSessionStore({ now: () => 0, random: (n) => new Uint8Array(n) });
    same.create(acme);
    expect(() => same.create(acme)).toThrow(/repeated/);
    const short = createSessionStore({ now: () => 0, random: () => new Uint8Array(16) });
    expect(() => short.create(acme)).toThrow(/32 random bytes/);
  });
});

describe('the session cookie', () => {
  it('is HttpOnly, SameSite=Strict, for /console only, and Secure when asked', () => {
    expect(sessionCookie('abc', false)).toBe('acl_console=abc; HttpOnly; SameSite=Strict; Path=/console');
    expect(sessionCookie('abc', true)).toBe('acl_console=abc; HttpOnly; SameSite=Strict; Path=/console; Secure');
    expect(clearedSessionCookie(false)).toBe('acl_console=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0');
  });

  it('is read back from a Cookie header among others', () => {
    expect(sessionIdOf('theme=dark; acl_console=abc_-1; x=y')).toBe('abc_-1');
    expect(sessionIdOf('theme=dark')).toBeUndefined();
    expect(sessionIdOf(undefined)).toBeUndefined();
  });

  it('parsing skips malformed pairs and keeps the first of a repeated name', () => {
    const cookies = parseCookies('novalue; =empty; b@d=1; sp ace=2; ok=1; q="quoted"; bad=a b; ok=2; semi=a,b; ;  trim = t ');
    expect([...cookies]).toEqual([
      ['ok', '1'],
      ['q', 'quoted'],
      ['trim', 't'],
    ]);
    expect(parseCookies('__proto__=x').get('__proto__')).toBe('x');
  });
});

describe('console sessions under pressure', () => {
  it("let one principal's sign-ins evict only its own sessions", () => {
    const { store } = storeAt({ maxPerPrincipal: 3 });
    const admin = store.create({ kind: 'admin' });
    const first = store.create(acme);
    for (let i = 0; i < 10; i++) store.create(acme);
    expect(store.get(admin.id)?.principal).toEqual({ kind: 'admin' });
    expect(store.get(first.id)).toBeUndefined();
    expect(store.size()).toBe(4);
  });

  it('peek without touching: a live stream does not keep an idle session awake', () => {
    const { store, advance } = storeAt();
    const { id } = store.create(acme);
    advance(20 * MINUTE);
    expect(store.peek(id)?.id).toBe(id);
    advance(20 * MINUTE);
    expect(store.peek(id)).toBeUndefined();
    expect(store.get(id)).toBeUndefined();
  });
});
