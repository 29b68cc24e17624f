// The console over HTTP (docs/console.md): sign-in, sessions, CSRF, tenant isolation, security headers.
// What a person sees in a real browser is test/console/browser/; this file holds the rules a browser need not drive.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, consoleOrigin, signIn } from '../../support/console.ts';
import {
  API_KEY,
  apiKeySecret,
  BASE_MANIFESTS,
  GLOBEX_KEY,
  GLOBEX_MANIFEST,
  startTestService,
  type TestService,
} from '../../support/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService({
    manifests: { ...BASE_MANIFESTS, 'globex.yaml': `${GLOBEX_MANIFEST}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}` },
  });
});
afterAll(() => t.stop());

describe('console access', () => {
  it('sends a person without a session to sign in, and keeps where they were going', async () => {
    const r = await fetch(`${consoleOrigin(t)}/console/t/acme`, { redirect: 'manual' });
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe('/console/signin?next=%2Fconsole%2Ft%2Facme');
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  it('refuses a wrong key with 401 and never echoes it', async () => {
    const r = await fetch(`${consoleOrigin(t)}/console/signin`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: consoleOrigin(t) },
      body: 'key=not-a-key-at-all-0123456789',
    });
    expect(r.status).toBe(401);
    const text = await r.text();
    expect(text).toContain('That key opens nothing here');
    expect(text).not.toContain('not-a-key-at-all');
    expect(r.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a sign-in posted from another site', async () => {
    const r = await fetch(`${consoleOrigin(t)}/console/signin`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'https://evil.example' },
      body: new URLSearchParams({ key: API_KEY }).toString(),
    });
    expect(r.status).toBe(403);
  });

  it('gives an HttpOnly SameSite=Strict cookie scoped to /console', async () => {
    const r = await fetch(`${consoleOrigin(t)}/console/signin`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: consoleOrigin(t) },
      body: new URLSearchParams({ key: await adminKey(t) }).toString(),
      redirect: 'manual',
    });
    expect(r.headers.get('set-cookie')).toMatch(/^acl_console=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/console$/);
  });

  it("lets a tenant's key see its tenant only, and answers 404 for the other alike whether it exists or not", async () => {
    const acme = await signIn(t, API_KEY);
    expect((await acme.get('/console/t/acme')).status).toBe(200);
    const overview = await acme.get('/console/');
    expect(overview.text).toContain('acme');
    expect(overview.text).not.toContain('globex');
    const other = await acme.get('/console/t/globex');
    const missing = await acme.get('/console/t/initech');
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(other.text.replace('globex', 'X')).toBe(missing.text.replace('initech', 'X'));
  });

  it('lets the admin key see every tenant', async () => {
    const admin = await signIn(t, await adminKey(t));
    const overview = await admin.get('/console/');
    expect(overview.text).toContain('href="/console/t/acme"');
    expect(overview.text).toContain('href="/console/t/globex"');
  });

  it('refuses a POST without the CSRF token, with a wrong one, or from another origin', async () => {
    const admin = await signIn(t, await adminKey(t));
    await admin.get('/console/');
    expect((await admin.post('/console/signout', { _csrf: '' })).status).toBe(403);
    // signout without a valid token leaves the session alone
    expect((await admin.get('/console/')).status).toBe(200);
    expect((await admin.post('/console/signout', {}, { Origin: 'https://evil.example' })).status).toBe(403);
    expect((await admin.get('/console/')).status).toBe(200);
    const again = await signIn(t, await adminKey(t));
    const wrong = await again.post('/console/t/acme', { _csrf: 'A'.repeat(43) });
    expect(wrong.status).toBe(403);
    const foreign = await again.post('/console/t/acme', {}, { Origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
  });

  it('ends the session at sign-out with a valid token', async () => {
    const admin = await signIn(t, await adminKey(t));
    await admin.get('/console/');
    expect((await admin.post('/console/signout', {})).status).toBe(303);
    expect((await admin.get('/console/')).status).toBe(303);
  });

  it('rate-limits sign-in attempts per client with Retry-After', async () => {
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 8; i++) {
      const r = await fetch(`${consoleOrigin(t)}/console/signin`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: consoleOrigin(t) },
        body: 'key=wrong-wrong-wrong-wrong',
      });
      statuses.push(r.status);
      retryAfter ??= r.headers.get('retry-after');
    }
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThan(0);
  });
});

describe('console admin keys that cannot be read', () => {
  it("say so on a wrong key (503), and a tenant's API key still signs in", async () => {
    const u = await startTestService();
    try {
      await rm(u.service.console.adminKeyFile);
      const r = await fetch(`${consoleOrigin(u)}/console/signin`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: consoleOrigin(u) },
        body: 'key=not-the-admin-key-0123456789',
      });
      expect(r.status).toBe(503);
      expect(await r.text()).toContain('The admin keys could not be read');
      expect((await (await signIn(u, API_KEY)).get('/console/t/acme')).status).toBe(200);
    } finally {
      await u.stop();
    }
  });
});

describe("a tenant's page with many rules", () => {
  it('shows the first 100, says how many there are, and filters them by name, type or action', async () => {
    const rules = Array.from(
      { length: 130 },
      (_, i) =>
        `---\napiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: { name: r${String(i).padStart(3, '0')}, namespace: acme }\nspec: { state: Enforced, subjectType: user, actions: [read], resourceType: ${i === 7 ? 'invoice' : 'note'} }\n`,
    );
    const u = await startTestService({ manifests: { ...BASE_MANIFESTS, 'many.yaml': rules.join('') } });
    try {
      const c = await signIn(u, API_KEY);
      const all = await c.get('/console/t/acme');
      expect(all.text).toContain('Showing the first 100 of 131 rules');
      expect(all.text).toContain('href="/console/t/acme/rules/r000"');
      expect(all.text).not.toContain('href="/console/t/acme/rules/r129"');
      const some = await c.get('/console/t/acme?q=INVOICE');
      expect(some.text).toContain('1 of 131 rules match');
      expect(some.text).toContain('href="/console/t/acme/rules/r007"');
      expect(some.text).not.toContain('href="/console/t/acme/rules/r000"');
      expect(some.text).toContain('value="INVOICE"');
    } finally {
      await u.stop();
    }
  });
});

describe("a tenant's session", () => {
  it('ends when its API key is deleted, and cannot be used to sign the admin out', async () => {
    const u = await startTestService({
      manifests: { ...BASE_MANIFESTS, 'globex.yaml': `${GLOBEX_MANIFEST}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}` },
    });
    try {
      const admin = await signIn(u, await adminKey(u));
      for (let i = 0; i < 60; i++) await signIn(u, GLOBEX_KEY);
      expect((await admin.get('/console/')).status).toBe(200);
      const globex = await signIn(u, GLOBEX_KEY);
      expect((await globex.get('/console/t/globex')).status).toBe(200);
      await u.write('globex.yaml', GLOBEX_MANIFEST);
      const after = await globex.get('/console/t/globex');
      expect(after.status).toBe(303);
      expect(after.headers.get('location')).toMatch(/^\/console\/signin/);
    } finally {
      await u.stop();
    }
  });
});
