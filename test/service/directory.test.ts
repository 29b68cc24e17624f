// Directory resources in standalone mode: decisions through POST /authorization and AuthZEN read
// the directory's properties under the request's own, an edit of the Directory file changes the
// decisions and the bundle (revision and embedded data), and the state folder (and `status`) shows
// each Directory's phase.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';
import { tarFile } from '../support/tar.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'src', 'cli.ts');

/** Directory "people" of acme: alice's team (which the rule team-documents reads) and email (which no rule reads). */
function people(aliceTeam: string, aliceEmail = 'alice@example.com'): string {
  return `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: people, namespace: acme }
spec:
  description: Users and documents
  entities:
    - type: user
      id: alice
      properties: { team: ${aliceTeam}, email: ${aliceEmail} }
    - type: document
      id: d1
      properties: { team: blue }
    - type: document
      id: d2
      properties: { team: red }
`;
}

let t: TestService;
beforeEach(async () => {
  t = await startTestService({ manifests: { ...BASE_MANIFESTS, 'directory.yaml': people('blue') } });
});
afterEach(async () => {
  await t.stop();
});

/** POST /authorization for alice (with extra subject properties) reading a document. */
async function authorization(
  document: string,
  properties: Record<string, unknown> = {},
): Promise<{ decision: string; policyId: string; reasons: string[] }> {
  const res = await t.decide({
    subject: { type: 'user', id: 'alice', properties },
    action: 'read',
    resource: { type: 'document', id: document },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { decision: string; policyId: string; reasons: string[] };
}

/** POST /access/v1/evaluation for alice reading a document. */
async function evaluation(document: string, properties?: Record<string, unknown>): Promise<boolean> {
  const res = await t.api('/access/v1/evaluation', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({
      subject: { type: 'user', id: 'alice', ...(properties ? { properties } : {}) },
      action: { name: 'read' },
      resource: { type: 'document', id: document },
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { decision: boolean }).decision;
}

/** Bundle acme/docs as OPA gets it: its revision (from .manifest) and policy.rego. */
async function docsBundle(): Promise<{ revision: number; rego: string; etag: string | null }> {
  const res = await t.bundle('acme', 'gateways', 'docs', { Authorization: `Bearer ${await t.token('acme', 'gateways')}` });
  expect(res.status).toBe(200);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const manifest = JSON.parse(tarFile(bytes, '.manifest') ?? '{}') as { revision?: string };
  return { revision: Number(manifest.revision), rego: tarFile(bytes, 'policy.rego') ?? '', etag: res.headers.get('etag') };
}

function statusCli(): string {
  const r = spawnSync(process.execPath, [CLI, 'status', '--state-dir', t.stateDir], { cwd: ROOT, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('Directory in standalone mode', () => {
  it("decides with the directory's properties through POST /authorization and AuthZEN, the request's own winning", async () => {
    expect(await authorization('d1')).toMatchObject({ decision: 'allow', policyId: 'acme/team-documents' });
    const denied = await authorization('d2');
    expect(denied).toMatchObject({ decision: 'deny' });
    expect(denied.reasons).toEqual([expect.stringContaining('principal.team == resource.team is false')]);
    // The request's own team wins over the directory's.
    expect((await authorization('d1', { team: 'red' })).decision).toBe('deny');
    expect((await authorization('d2', { team: 'red' })).decision).toBe('allow');

    expect(await evaluation('d1')).toBe(true);
    expect(await evaluation('d2')).toBe(false);
    expect(await evaluation('d2', { team: 'red' })).toBe(true);
    expect(await evaluation('d1', { team: 'red' })).toBe(false);

    // An entity the directory does not know has only what the request sends.
    const unknown = await t.decide({ subject: { type: 'user', id: 'zed' }, action: 'read', resource: { type: 'document', id: 'd1' } });
    expect(await unknown.json()).toMatchObject({ decision: 'deny', reasons: [expect.stringContaining('principal.team is missing')] });
  });

  it('follows an edit of the Directory file: other decisions, and a new bundle revision only when embedded data changed', async () => {
    const first = await docsBundle();
    expect(first.revision).toBe(1);
    expect(first.rego).toContain('"alice": {"team": "blue"}');
    expect(first.rego).not.toContain('alice@example.com');
    expect(t.service.state.object('Bundle', 'acme', 'docs')?.status).toMatchObject({ revision: 1 });

    await t.write('directory.yaml', people('red'));
    expect((await authorization('d1')).decision).toBe('deny');
    expect((await authorization('d2')).decision).toBe('allow');
    expect(await evaluation('d2')).toBe(true);
    const second = await docsBundle();
    expect(second.revision).toBe(2);
    expect(second.rego).toContain('"alice": {"team": "red"}');
    expect(second.etag).not.toBe(first.etag);
    expect(t.service.state.object('Bundle', 'acme', 'docs')?.status).toMatchObject({ revision: 2 });

    // Only a property no rule reads: the decisions and the bundle stay as they are.
    await t.write('directory.yaml', people('red', 'alice@new.example'));
    expect(t.service.store.snapshot().tenants.get('acme')?.directory.get('user', 'alice')).toEqual({
      team: 'red',
      email: 'alice@new.example',
    });
    const third = await docsBundle();
    expect(third).toEqual(second);
    expect(t.service.state.object('Bundle', 'acme', 'docs')?.status).toMatchObject({ revision: 2 });

    // The Directory removed: nothing is embedded any more, and alice has no team.
    await t.write('directory.yaml', undefined);
    const fourth = await docsBundle();
    expect(fourth.revision).toBe(3);
    expect(fourth.rego).not.toContain('acl_directory');
    expect((await authorization('d2')).decision).toBe('deny');
    expect(t.service.state.object('Directory', 'acme', 'people')).toBeUndefined();
  });

  it("records each Directory's phase in the state folder, which `status --state-dir` shows", async () => {
    expect(t.service.state.object('Directory', 'acme', 'people')?.status).toMatchObject({
      phase: 'Ready',
      entityCount: 3,
      observedGeneration: 1,
      // email is read by no rule: lint says so (docs/testing.md).
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Loaded' },
        { type: 'Warning', status: 'True', reason: 'DirectoryPropertyUnread' },
      ],
    });
    expect(statusCli()).toMatch(/^NAMESPACE +NAME +PHASE +ENTITIES +WARNING +MESSAGE\nacme +people +Ready +3 +DirectoryPropertyUnread$/m);

    // A second Directory listing alice again (its name sorts after "people") and an invalid one.
    await t.write(
      'more.yaml',
      `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: staff, namespace: acme }
spec:
  entities:
    - { type: user, id: alice, properties: { team: green } }
    - { type: user, id: bob, properties: { team: red } }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: broken, namespace: acme }
spec:
  entities:
    - { type: user, id: carol, properties: { team: red, id: carol } }
`,
    );
    expect(t.service.state.object('Directory', 'acme', 'staff')?.status).toMatchObject({
      phase: 'Conflict',
      entityCount: 1,
      conditions: [{ reason: 'DuplicateEntities' }],
    });
    expect(t.service.state.object('Directory', 'acme', 'broken')?.status).toMatchObject({
      phase: 'Invalid',
      entityCount: 0,
      conditions: [{ reason: 'InvalidSpec' }],
    });
    // people's alice (team blue) stays in effect; bob from staff too; carol from nowhere.
    expect((await authorization('d1')).decision).toBe('allow');
    const bob = await t.decide({ subject: { type: 'user', id: 'bob' }, action: 'read', resource: { type: 'document', id: 'd2' } });
    expect(((await bob.json()) as { decision: string }).decision).toBe('allow');
    const carol = await t.decide({ subject: { type: 'user', id: 'carol' }, action: 'read', resource: { type: 'document', id: 'd2' } });
    expect(((await carol.json()) as { decision: string }).decision).toBe('deny');

    const out = statusCli();
    expect(out).toMatch(/^acme +broken +Invalid +0 +spec\.entities\.0\.properties\.id: "id" is not a property/m);
    expect(out).toMatch(/^acme +people +Ready +3 +DirectoryPropertyUnread$/m);
    expect(out).toMatch(
      /^acme +staff +Conflict +1 +1 of 2 entities are also listed by a Directory whose name sorts first.*user "alice" \(Directory people\)/m,
    );
  });
});
