import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { hashToken } from '../auth/index.ts';
import type { AgentRegistry, RecentDecisions } from '../fleet/index.ts';
import { createStore } from '../store/index.ts';
import { createConsoleApp } from './app.ts';
import type { ConsoleDeps } from './deps.ts';
import { ADMIN_KEYS_MAX_AGE_MS, UNGUESSABLE_KEY_LENGTH } from './signin.ts';

// A Kubernetes admin Secret made as docs/console.md says (openssl rand -base64 32): 44 characters.
const ADMIN_KEY = 'q3Vh0m9K2xJmYbqZ7bq6n2fGZr0pVtQm1mX4yW8sN0E=';
const SHORT_ADMIN_KEY = 'short-admin-key-0123';
const TENANT_KEY = 'acme-api-key-0123456789';

interface Harness {
  readonly origin: string;
  /** Admin key reads so far (LISTs of Secrets in Kubernetes mode). */
  reads(): number;
  advance(ms: number): void;
  /** What the next reads of the admin keys find, or the error they fail with. */
  setAdminKeys(keys: readonly string[] | Error): void;
  signIn(key: string): Promise<Response>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

async function harness(): Promise<Harness> {
  let nowMs = Date.parse('2025-03-01T12:00:00.000Z');
  let reads = 0;
  let adminKeys: readonly string[] | Error = [ADMIN_KEY, SHORT_ADMIN_KEY];
  const store = createStore();
  store.draft.setApiKey('acme', 'key', hashToken(TENANT_KEY));
  store.publish();
  const deps: ConsoleDeps = {
    mode: 'kubernetes',
    store,
    objects: { get: () => undefined, list: () => [] },
    agents: {} as AgentRegistry,
    recent: {} as RecentDecisions,
    log: pino({ level: 'silent' }),
    now: () => nowMs,
    random: (n) => crypto.getRandomValues(new Uint8Array(n)),
    adminKeyHashes: async () => {
      reads++;
      if (adminKeys instanceof Error) throw adminKeys;
      return new Set(adminKeys.map(hashToken));
    },
    editor: { edit: async () => ({ ok: false, status: 500, message: 'no editor here' }) },
    readTokenSecret: () => undefined,
    opa: undefined,
  };
  const app = createConsoleApp(deps, { version: () => '0' });
  const server = createServer(app.handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    reads: () => reads,
    advance: (ms) => {
      nowMs += ms;
    },
    setAdminKeys: (keys) => {
      adminKeys = keys;
    },
    async signIn(key) {
      const r = await fetch(`${origin}/console/signin`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin },
        body: new URLSearchParams({ key }).toString(),
        redirect: 'manual',
      });
      await r.arrayBuffer();
      return r;
    },
  };
}

async function flood(h: Harness, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const key = i % 2 === 0 ? `short-guess-${i}-0123` : `a-long-wrong-key-${i}-`.padEnd(UNGUESSABLE_KEY_LENGTH + 8, 'z');
    statuses.push((await h.signIn(key)).status);
  }
  return statuses;
}

describe('console sign-in under a flood of wrong keys from one address', () => {
  it('lets an admin key of 44 characters in, and reads the admin keys once for the whole flood', async () => {
    const h = await harness();
    const statuses = await flood(h, 200);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(195);
    expect((await h.signIn(ADMIN_KEY)).status).toBe(303);
    expect(h.reads()).toBe(1);
    // Each further read waits until the last one is old.
    h.advance(ADMIN_KEYS_MAX_AGE_MS - 1);
    await flood(h, 50);
    expect(h.reads()).toBe(1);
    h.advance(1);
    await flood(h, 50);
    expect((await h.signIn(ADMIN_KEY)).status).toBe(303);
    expect(h.reads()).toBe(2);
  });

  it('keeps shorter keys behind the limit, right or wrong, until it refills (12 s an attempt)', async () => {
    const h = await harness();
    await flood(h, 20);
    const short = await h.signIn(SHORT_ADMIN_KEY);
    expect(short.status).toBe(429);
    expect(short.headers.get('retry-after')).toBe('12');
    expect((await h.signIn(TENANT_KEY)).status).toBe(429);
    h.advance(12_000);
    expect((await h.signIn(SHORT_ADMIN_KEY)).status).toBe(303);
    // A right key gave its attempt back: the next one in is a guess, and it is the only one.
    expect((await h.signIn('another-short-guess-01')).status).toBe(401);
    expect((await h.signIn('and-one-more-guess-012')).status).toBe(429);
  });

  it('bounds guessing of short keys to 5 a minute from one address, however many are sent', async () => {
    const h = await harness();
    let checked = 0;
    for (let minute = 0; minute < 10; minute++) {
      for (let i = 0; i < 100; i++) if ((await h.signIn(`guess-${minute}-${i}-0123456`)).status === 401) checked++;
      h.advance(60_000);
    }
    // Five at once, then one back every 12 s: 5 in the first minute, 5 in each one after.
    expect(checked).toBe(50);
  });
});

describe('console admin keys that cannot be read, under a flood', () => {
  it('say so (503) and are read again only once the failure is old', async () => {
    const h = await harness();
    h.setAdminKeys(new Error('the API server is down'));
    for (let i = 0; i < 30; i++) expect((await h.signIn(ADMIN_KEY)).status).toBe(503);
    expect(h.reads()).toBe(1);
    h.setAdminKeys([ADMIN_KEY]);
    expect((await h.signIn(ADMIN_KEY)).status).toBe(503);
    h.advance(ADMIN_KEYS_MAX_AGE_MS);
    expect((await h.signIn(ADMIN_KEY)).status).toBe(303);
    expect(h.reads()).toBe(2);
  });

  it("let a tenant's API key in without reading them", async () => {
    const h = await harness();
    h.setAdminKeys(new Error('the API server is down'));
    for (let i = 0; i < 5; i++) expect((await h.signIn(TENANT_KEY)).status).toBe(303);
    expect(h.reads()).toBe(0);
  });
});

describe('an admin key added or deleted', () => {
  it('counts once the last read is 5 s old', async () => {
    const h = await harness();
    const NEW_KEY = 'a-new-admin-key-made-just-now-0123456789';
    expect((await h.signIn(ADMIN_KEY)).status).toBe(303);
    h.setAdminKeys([NEW_KEY]);
    expect((await h.signIn(ADMIN_KEY)).status).toBe(303);
    h.advance(ADMIN_KEYS_MAX_AGE_MS);
    expect((await h.signIn(ADMIN_KEY)).status).toBe(401);
    expect((await h.signIn(NEW_KEY)).status).toBe(303);
  });
});
