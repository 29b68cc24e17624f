// Sign-in under a flood of wrong keys (docs/console.md, "Access"): behind a port-forward every client is
// 127.0.0.1, so the limit on wrong keys is everyone's limit. The generated admin key (43 characters)
// still signs in through it; a short key stays behind it.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, consoleOrigin } from '../../support/console.ts';
import { API_KEY, startTestService, type TestService } from '../../support/service.ts';

let t: TestService;
/** The messages the service logged. */
const logged: string[] = [];
beforeAll(async () => {
  // The clock stands still: no attempt comes back during the test, however slowly it runs.
  const now = new Date('2025-03-01T12:00:00.000Z');
  const lines = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logged.push((JSON.parse(line) as { msg: string }).msg);
      done();
    },
  });
  t = await startTestService({ serviceOptions: { now: () => now, log: pino({ level: 'info' }, lines) } });
});
afterAll(() => t.stop());

function signInWith(key: string): Promise<Response> {
  return fetch(`${consoleOrigin(t)}/console/signin`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: consoleOrigin(t) },
    body: new URLSearchParams({ key }).toString(),
    redirect: 'manual',
  });
}

describe('a flood of wrong keys from 127.0.0.1', () => {
  it('refuses the flood with 429, then lets the admin key in, and keeps a short key behind the limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 120; i++) {
      // Short guesses and long ones alike.
      const r = await signInWith(i % 2 === 0 ? `wrong-guess-${String(i).padStart(8, '0')}` : `a-long-wrong-key-${'x'.repeat(30)}-${i}`);
      statuses.push(r.status);
      await r.arrayBuffer();
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.slice(5).every((s) => s === 429)).toBe(true);

    const admin = await signInWith(await adminKey(t));
    expect(admin.status).toBe(303);
    expect(admin.headers.get('set-cookie')).toMatch(/^acl_console=/);

    // The tenant's API key (29 characters) is right, but short: not even checked while the limit holds.
    expect(API_KEY.length).toBeLessThan(32);
    const tenant = await signInWith(API_KEY);
    expect(tenant.status).toBe(429);
    expect(Number(tenant.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await tenant.text()).toContain('Too many sign-in attempts');

    // Ten admin sign-ins in a row take nothing from the limit, and the flood goes on being refused.
    for (let i = 0; i < 10; i++) expect((await signInWith(await adminKey(t))).status).toBe(303);
    expect((await signInWith(`a-long-wrong-key-${'y'.repeat(30)}`)).status).toBe(429);

    // 121 refusals, and the log holds a line per kind and interval, not a line per attempt.
    const refusals = logged.filter((m) => m.startsWith('Console sign-in refused'));
    expect(refusals).toEqual(['Console sign-in refused: the key opens nothing', 'Console sign-in refused: too many attempts']);
  });
});
