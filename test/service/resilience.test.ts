// What must survive typos, half-written files, invalid edits, restarts and failed writes: tokens,
// revision numbers and the rules in force.
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { API_KEY, apiKeySecret, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
afterEach(async () => {
  await t.stop();
});

const RULES = BASE_MANIFESTS['rules.yaml'] as string;
const CONNECTORS = BASE_MANIFESTS['connectors.yaml'] as string;
const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });
const allowedBody = { subject: { type: 'user', id: 'a', team: 'x' }, action: 'read', resource: { type: 'document', id: 'd', team: 'x' } };

async function docs(): Promise<{ status: number; etag: string | null; revision: number | undefined }> {
  const res = await t.bundle('acme', 'gateways', 'docs', bearer(await t.token('acme', 'gateways')));
  return {
    status: res.status,
    etag: res.headers.get('etag'),
    revision: t.service.store.snapshot().tenants.get('acme')?.bundles.get('docs')?.built.revision,
  };
}
const restart = async (): Promise<void> => {
  t = await t.restart();
};
const decision = async (): Promise<string> => ((await (await t.decide(allowedBody)).json()) as { decision: string }).decision;
const state = (kind: 'Rule' | 'Bundle' | 'Connector', name: string): Record<string, unknown> =>
  (t.service.state.object(kind, 'acme', name)?.status ?? {}) as Record<string, unknown>;

describe('after a restart', () => {
  it('a file that no longer parses keeps its objects, tokens and revisions', async () => {
    t = await startTestService();
    await t.write('rules.yaml', RULES.replace('[read, write]', '[read]'));
    const before = await docs();
    const token = await t.token('acme', 'gateways');
    await writeFile(join(t.manifests, 'connectors.yaml'), `${CONNECTORS}\n  broken: [`);
    await writeFile(join(t.manifests, 'rules.yaml'), `${RULES}\n  broken: [`);
    await restart();
    expect(t.service.source.problems()).toHaveLength(2);
    expect(await docs()).toEqual(before);
    expect(await t.token('acme', 'gateways')).toBe(token);
    await t.write('connectors.yaml', CONNECTORS);
    await t.write('rules.yaml', RULES.replace('[read, write]', '[read]'));
    expect(await docs()).toEqual(before);
    expect(await t.token('acme', 'gateways')).toBe(token);
  });

  it('the temporary files a killed process left in the state folder are gone, and nothing else', async () => {
    t = await startTestService();
    const before = await docs();
    const token = await t.token('acme', 'gateways');
    const orphan = join(t.stateDir, 'objects', 'acme', 'rule', `team-documents.yaml.${process.pid}.tmp`);
    t = await t.restart(async () => {
      // What kill -9 between the write and the rename of an atomic write leaves (the pid repeats in a container).
      await writeFile(orphan, '');
    });
    await expect(stat(orphan)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await docs()).toEqual(before);
    expect(await t.token('acme', 'gateways')).toBe(token);
  });

  it('an invalid rule edit keeps the last good version in force, and no revision moves', async () => {
    t = await startTestService();
    const before = await docs();
    await t.write('rules.yaml', RULES.replace('principal.team == resource.team', 'principal.team ==== resource.team'));
    await restart();
    expect(await decision()).toBe('allow');
    expect(await docs()).toEqual(before);
    expect(state('Rule', 'team-documents')).toMatchObject({ phase: 'Invalid', translation: { status: 'Stale', generation: 1 } });
  });

  it('an invalid bundle keeps its revision numbers: the fixed bundle continues from them', async () => {
    t = await startTestService();
    await t.write('rules.yaml', RULES.replace('[read, write]', '[read]'));
    expect((await docs()).revision).toBe(2);
    await t.write('connectors.yaml', CONNECTORS.replace('entityTypes: [document]', 'entityTypes: [document], bogus: 1'));
    await restart();
    expect(state('Bundle', 'docs')).toMatchObject({ phase: 'Invalid', revision: 2 });
    await t.write('rules.yaml', RULES);
    await t.write('connectors.yaml', CONNECTORS);
    expect((await docs()).revision).toBe(3);
  });

  it('an invalid connector keeps serving its token', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    await t.write(
      'connectors.yaml',
      CONNECTORS.replace('name: gateways, namespace: acme }\nspec: {}', 'name: gateways, namespace: acme }\nspec: { tokenRotation: -1 }'),
    );
    await restart();
    expect(state('Connector', 'gateways')).toMatchObject({ phase: 'Invalid' });
    expect((await docs()).status).toBe(200);
    expect(await t.token('acme', 'gateways')).toBe(token);
  });

  it('a token file or token Secret deleted while running is written again from memory', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const secretFile = join(t.stateDir, 'secrets', 'acme', 'gateways-token.yaml');
    const secret = await readFile(secretFile, 'utf8');
    await rm(t.service.state.tokenFile('acme', 'gateways'));
    await rm(secretFile);
    // The folder watch rewrites them; poll the files (no fixed sleep) with a generous deadline.
    await vi.waitFor(
      async () => {
        expect(await t.token('acme', 'gateways')).toBe(token);
      },
      { timeout: 10_000, interval: 20 },
    );
    await vi.waitFor(
      async () => {
        expect(await readFile(secretFile, 'utf8')).toBe(secret);
      },
      { timeout: 10_000, interval: 20 },
    );
    t = await t.restart();
    expect(await t.token('acme', 'gateways')).toBe(token);
  });

  it('a token file that lost a write is repaired from the Secret', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    t = await t.restart(() => writeFile(t.service.state.tokenFile('acme', 'gateways'), 'agent_stale'));
    expect(await t.token('acme', 'gateways')).toBe(token);
  });
});

describe('while running', () => {
  it('a file caught empty is not a deletion until a later read confirms it', async () => {
    t = await startTestService({ serviceOptions: { confirmDeleteMs: 60_000 } });
    const token = await t.token('acme', 'gateways');
    await t.write('connectors.yaml', '');
    expect((await docs()).status).toBe(200);
    await t.write('connectors.yaml', CONNECTORS);
    expect(await t.token('acme', 'gateways')).toBe(token);
    expect((await docs()).status).toBe(200);
  });

  it('an object seen missing, then in a broken file, gets a full confirmation delay when missing again', async () => {
    t = await startTestService({ serviceOptions: { confirmDeleteMs: 60_000 } });
    const token = await t.token('acme', 'gateways');
    const clock = { now: Date.now() };
    const realNow = Date.now;
    Date.now = () => clock.now;
    try {
      await t.write('connectors.yaml', ''); // caught empty: the delay starts
      clock.now += 120_000;
      await t.write('connectors.yaml', 'kind: ['); // unreadable: everything kept, the delay forgotten
      await t.write('connectors.yaml', ''); // caught empty again: a new delay, not the old one
      expect((await docs()).status).toBe(200);
      await t.write('connectors.yaml', CONNECTORS);
      expect(await t.token('acme', 'gateways')).toBe(token);
    } finally {
      Date.now = realNow;
    }
  });

  it('a removed file is deleted once the confirmation delay has passed', async () => {
    t = await startTestService({ serviceOptions: { confirmDeleteMs: 50 } });
    const token = await t.token('acme', 'gateways');
    await t.write('connectors.yaml', undefined);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(token))).status).toBe(200);
    await expect.poll(async () => (await t.bundle('acme', 'gateways', 'docs', bearer(token))).status, { timeout: 5000 }).toBe(401);
  });

  it('a rule deleted and written again with another spec is translated again', async () => {
    t = await startTestService();
    await t.write('rules.yaml', undefined);
    await t.write('rules.yaml', RULES.replace('principal.team == resource.team', 'principal.team != resource.team'));
    expect(t.service.state.object('Rule', 'acme', 'team-documents')?.generation).toBe(1);
    expect(await decision()).toBe('deny');
    expect((state('Rule', 'team-documents')['translation'] as { rego: string }).rego).toContain('!=');
  });

  it('a failed token write is retried with a token that both files hold', async () => {
    t = await startTestService({ serviceOptions: {} });
    const old = await t.token('acme', 'gateways');
    const real = t.service.state.writeTokenSecret;
    let failures = 1;
    t.service.state.writeTokenSecret = async (owner, secret) => {
      if (failures-- > 0) throw new Error('disk full');
      return real(owner, secret);
    };
    await t.write(
      'connectors.yaml',
      CONNECTORS.replace('name: gateways, namespace: acme }\nspec: {}', 'name: gateways, namespace: acme }\nspec: { tokenRotation: 1 }'),
    );
    await expect.poll(async () => t.token('acme', 'gateways'), { timeout: 5000 }).not.toBe(old);
    await t.service.controller.idle();
    const fresh = await t.token('acme', 'gateways');
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(fresh))).status).toBe(200);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(old))).status).toBe(401);
    const secret = await readFile(join(t.stateDir, 'secrets', 'acme', 'gateways-token.yaml'), 'utf8');
    expect(secret).toContain(Buffer.from(fresh).toString('base64'));
  });

  it('a deleted bundle answers its held polls at once', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const etag = (await docs()).etag ?? '';
    const held = t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'If-None-Match': etag, Prefer: 'wait=30' });
    await expect.poll(() => t.service.longPolls.size()).toBe(1);
    await t.write(
      'connectors.yaml',
      CONNECTORS.split('---')
        .filter((d) => !d.includes('name: docs,'))
        .join('---'),
    );
    expect((await held).status).toBe(404);
  });

  it('an API key held by Secrets of two tenants opens neither', async () => {
    t = await startTestService();
    expect((await t.decide(allowedBody)).status).toBe(200);
    await t.write('globex-key.yaml', apiKeySecret('globex', 'copied', API_KEY));
    expect((await t.decide(allowedBody)).status).toBe(401);
    await t.write('globex-key.yaml', undefined);
    expect((await t.decide(allowedBody)).status).toBe(200);
  });

  it('moves the revision when entityTypes change even if the same rules stay selected', async () => {
    t = await startTestService();
    await t.write('connectors.yaml', CONNECTORS.replace('entityTypes: [document]', 'entityTypes: [document, user]'));
    expect((await docs()).revision).toBe(2);
    expect(state('Bundle', 'docs')).toMatchObject({ revision: 2, ruleCount: 1 });
  });
});
