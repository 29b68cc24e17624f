// The folder source against a hostile or careless writer: link loops and links out of the folder,
// files caught mid-write, emptied files, oversized files. Each case here was reproduced against the
// service before the folder source was hardened.
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
afterEach(async () => {
  await t.stop();
});

const RULES = BASE_MANIFESTS['rules.yaml'] as string;
const CONNECTORS = BASE_MANIFESTS['connectors.yaml'] as string;
const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });
/** A request whose teams differ: denied by team-documents, allowed by a rule without its condition. */
const otherTeam = { subject: { type: 'user', id: 'a', team: 'x' }, action: 'read', resource: { type: 'document', id: 'd', team: 'y' } };
const sameTeam = { subject: { type: 'user', id: 'a', team: 'x' }, action: 'read', resource: { type: 'document', id: 'd', team: 'x' } };
const decision = async (body: unknown): Promise<string> => ((await (await t.decide(body)).json()) as { decision: string }).decision;

describe('links in the manifests folder', () => {
  it('reports a loop or a link out of the folder, follows none, and keeps applying changes', { timeout: 20_000 }, async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const d = join(t.manifests, 'd');
    await mkdir(d);
    await symlink('.', join(d, 'self'));
    await symlink('..', join(d, 'loop'));
    await symlink('/etc', join(t.manifests, 'outside'));
    await writeFile(join(d, 'extra.yaml'), RULES.replace('team-documents', 'extra'));
    await t.settle();
    expect(t.service.source.problems().map((p) => [p.source, p.message])).toEqual([
      ['d/loop', expect.stringMatching(/a folder that contains it \(a loop\): not followed/)],
      ['d/self', expect.stringMatching(/a folder that contains it \(a loop\): not followed/)],
      ['outside', expect.stringMatching(/a link out of the manifests folder \(to \/etc\): not followed/)],
    ]);
    expect(t.service.source.get('Rule', 'acme', 'extra')).toBeDefined();
    // A revocation still applies: the loop does not stop the folder from being read.
    await t.write(
      'connectors.yaml',
      CONNECTORS.replace('name: gateways, namespace: acme }\nspec: {}', 'name: gateways, namespace: acme }\nspec: { revoked: true }'),
    );
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(token))).status).toBe(401);
  });

  it('reads a ConfigMap-style folder: file links into ..data are followed', async () => {
    t = await startTestService({ manifests: { 'keys.yaml': BASE_MANIFESTS['keys.yaml'] as string } });
    await mkdir(join(t.manifests, '..2026_11_24'));
    await writeFile(join(t.manifests, '..2026_11_24', 'rules.yaml'), RULES);
    await symlink('..2026_11_24', join(t.manifests, '..data'));
    await symlink('..data/rules.yaml', join(t.manifests, 'rules.yaml'));
    await t.settle();
    expect(t.service.source.problems()).toEqual([]);
    expect(t.service.source.get('Rule', 'acme', 'team-documents')).toBeDefined();
  });
});

describe('a file is used only once it holds still', () => {
  it('a file caught mid-write never applies in part: no wider, narrower or missing rule meanwhile', async () => {
    // The clock starts well after the files were written, so the first read takes them as settled.
    let nowMs = Date.now() + 60_000;
    t = await startTestService({ serviceOptions: { settleMs: 300, now: () => new Date(nowMs) } });
    expect(await decision(otherTeam)).toBe('deny');
    const edited = RULES.replace('principal.team == resource.team', 'principal.team == resource.team || resource.team == "public"');
    // The writer truncates, then writes in pieces: each piece is a file that parses.
    const cut = edited.slice(0, edited.indexOf('  condition:'));
    for (const piece of ['', cut.slice(0, cut.indexOf('spec:')), cut, edited]) {
      await writeFile(join(t.manifests, 'rules.yaml'), piece);
      await t.settle();
      nowMs += 200;
      await t.settle();
      // Neither the rule without its condition (a wider grant) nor no rule (a deletion) is ever used.
      expect(await decision(otherTeam)).toBe('deny');
      expect(await decision(sameTeam)).toBe('allow');
      expect(t.service.source.get('Rule', 'acme', 'team-documents')?.raw['spec']).toMatchObject({
        condition: 'principal.team == resource.team',
      });
    }
    expect(t.service.source.settling()).toEqual(['rules.yaml']);
    nowMs += 100;
    await t.settle();
    expect(t.service.source.settling()).toEqual([]);
    expect(await decision({ ...otherTeam, resource: { ...otherTeam.resource, team: 'public' } })).toBe('allow');
    expect(await decision(otherTeam)).toBe('deny');
  });

  it('a file caught with broken YAML mid-write is reported only once it holds still', async () => {
    let nowMs = Date.now() + 60_000;
    t = await startTestService({ serviceOptions: { settleMs: 300, now: () => new Date(nowMs) } });
    await writeFile(join(t.manifests, 'rules.yaml'), `${RULES}\n  broken: [`);
    await t.settle();
    expect(t.service.source.problems()).toEqual([]);
    expect(t.service.source.settling()).toEqual(['rules.yaml']);
    nowMs += 300;
    await t.settle();
    expect(t.service.source.problems()).toEqual([
      { source: 'rules.yaml', document: 1, name: undefined, message: expect.stringMatching(/invalid YAML/) },
    ]);
    expect(await decision(sameTeam)).toBe('allow');
  });

  it('an emptied file changes nothing until it is filled again or removed', async () => {
    t = await startTestService();
    await t.write('rules.yaml', '');
    expect(await decision(sameTeam)).toBe('allow');
    expect(t.service.source.problems()).toEqual([
      {
        source: 'rules.yaml',
        document: 0,
        name: undefined,
        message: expect.stringMatching(/holds no objects now: the objects it held stay in force/),
      },
    ]);
    await t.write('rules.yaml', '# nothing here yet\n---\n');
    expect(await decision(sameTeam)).toBe('allow');
    await t.write('rules.yaml', undefined);
    expect(await decision(sameTeam)).toBe('deny');
  });
});

describe('an API key file emptied down to comments', () => {
  it('revokes its key at once, every time, while an emptied rules file keeps its rules', async () => {
    t = await startTestService();
    const KEYS = BASE_MANIFESTS['keys.yaml'] as string;
    for (let round = 1; round <= 10; round++) {
      // What an admin revoking a key does: the Secret deleted from its file, a comment left in its place.
      await t.write('keys.yaml', `# ${round}: key revoked, see the ticket\n`);
      expect((await t.decide(sameTeam)).status, `round ${round}`).toBe(401);
      expect(t.service.source.get('Secret', 'acme', 'key')).toBeUndefined();
      expect(t.service.source.problems()).toEqual([
        expect.objectContaining({ source: 'keys.yaml', message: expect.stringMatching(/the API keys it held are revoked/) }),
      ]);
      await t.write('keys.yaml', KEYS);
      expect(await decision(sameTeam)).toBe('allow');
    }
    // The same file emptied with the key's rules beside it: the rules stay, the key goes.
    await t.write('keys.yaml', undefined);
    await t.write('rules.yaml', `${RULES}---\n${KEYS}`);
    expect(await decision(sameTeam)).toBe('allow');
    await t.write('rules.yaml', '# emptied\n');
    expect((await t.decide(sameTeam)).status).toBe(401);
    expect(t.service.source.get('Rule', 'acme', 'team-documents')).toBeDefined();
  });
});

describe('limits', () => {
  it('a file over --max-manifest-bytes is a problem and keeps what it held; the rest is read', async () => {
    t = await startTestService({
      config: { folder: { settleMs: 0, rescanSeconds: 0, maxManifestBytes: 4096, maxManifestDocuments: 100 } },
    });
    const padding = `# ${'x'.repeat(5000)}\n`;
    await t.write('rules.yaml', `${padding}${RULES.replace('principal.team == resource.team', 'true')}`);
    await t.write('more.yaml', RULES.replace('team-documents', 'more'));
    expect(t.service.source.problems()).toEqual([
      {
        source: 'rules.yaml',
        document: 0,
        name: undefined,
        message: expect.stringMatching(/more than the limit of 4096 \(--max-manifest-bytes\): not read/),
      },
    ]);
    expect(await decision(otherTeam)).toBe('deny');
    expect(t.service.source.get('Rule', 'acme', 'more')).toBeDefined();
  });

  it('a file over --max-manifest-documents is a problem and keeps what it held', async () => {
    t = await startTestService({
      config: { folder: { settleMs: 0, rescanSeconds: 0, maxManifestBytes: 1 << 20, maxManifestDocuments: 4 } },
    });
    await t.write('rules.yaml', Array.from({ length: 5 }, (_, i) => RULES.replace('team-documents', `r${i}`)).join('---\n'));
    expect(t.service.source.problems()).toEqual([
      {
        source: 'rules.yaml',
        document: 0,
        name: undefined,
        message: expect.stringMatching(/5 documents, more than the limit of 4 \(--max-manifest-documents\)/),
      },
    ]);
    expect(t.service.source.get('Rule', 'acme', 'team-documents')).toBeDefined();
    expect(t.service.source.get('Rule', 'acme', 'r0')).toBeUndefined();
  });
});
