import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { apiKeySecret, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
afterEach(async () => {
  await t.stop();
});

const RULES = BASE_MANIFESTS['rules.yaml'] as string;
const rule = (name: string, extra = '', state = 'Enforced', resourceType = 'document'): string => `
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: ${name}, namespace: acme${extra} }
spec: { state: ${state}, subjectType: user, actions: [read], resourceType: ${resourceType}, condition: 'principal.level > 1' }
`;
const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

async function served(name = 'docs'): Promise<{ revision: number; etag: string; bytes: string }> {
  const token = await t.token('acme', name === 'docs' ? 'gateways' : 'backends');
  const res = await t.bundle('acme', name === 'docs' ? 'gateways' : 'backends', name, bearer(token));
  expect(res.status).toBe(200);
  const bytes = Buffer.from(await res.arrayBuffer()).toString('base64');
  const revision = t.service.store.snapshot().tenants.get('acme')?.bundles.get(name)?.built.revision ?? -1;
  return { revision, etag: res.headers.get('etag') ?? '', bytes };
}

function status(kind: 'Rule' | 'Bundle' | 'Connector', name: string): Record<string, unknown> {
  return (t.service.state.object(kind, 'acme', name)?.status ?? {}) as Record<string, unknown>;
}

describe('bundle revisions', () => {
  it('go up by one exactly when the content changes, per bundle', async () => {
    t = await startTestService();
    expect((await served('docs')).revision).toBe(1);
    await t.write('rules.yaml', RULES + rule('levels'));
    expect((await served('docs')).revision).toBe(2);
    expect((await served('internal')).revision).toBe(2);
    // A report rule is outside docs' entityTypes: only the unfiltered bundle changes.
    await t.write('rules.yaml', RULES + rule('levels') + rule('reports', '', 'Enforced', 'report'));
    expect((await served('docs')).revision).toBe(2);
    expect((await served('internal')).revision).toBe(3);
    // Removing a rule, and changing the bundle spec, are changes too.
    await t.write('rules.yaml', RULES + rule('reports', '', 'Enforced', 'report'));
    expect((await served('docs')).revision).toBe(3);
    await t.write(
      'connectors.yaml',
      (BASE_MANIFESTS['connectors.yaml'] as string).replace(
        'spec: { connector: backends }',
        'spec: { connector: backends, regoVersion: 1 }',
      ),
    );
    expect((await served('internal')).revision).toBe(5);
    expect(status('Bundle', 'internal')).toMatchObject({ revision: 5, ruleCount: 2, phase: 'Ready' });
  });

  it('do not move on a no-op edit: comments, key order, flow or block style', async () => {
    t = await startTestService();
    const before = await served();
    const generation = t.service.state.object('Rule', 'acme', 'team-documents')?.generation;
    await t.write(
      'rules.yaml',
      `# reformatted, same meaning
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata:
  namespace: acme
  name: team-documents
spec:
  resourceType: document
  condition: principal.team == resource.team
  actions:
    - read
    - write
  subjectType: user
  state: Enforced
`,
    );
    expect(await served()).toEqual(before);
    expect(t.service.state.object('Rule', 'acme', 'team-documents')?.generation).toBe(generation);
  });

  it('survive a restart with byte-identical bundles, the same ETags and the same tokens', async () => {
    t = await startTestService();
    await t.write('rules.yaml', RULES + rule('levels'));
    const before = await served();
    const token = await t.token('acme', 'gateways');
    expect(before.revision).toBe(2);
    t = await t.restart();
    expect(await served()).toEqual(before);
    expect(await t.token('acme', 'gateways')).toBe(token);
    // A change made while the service was down is one more revision, not a restart from 1.
    const { writeFile } = await import('node:fs/promises');
    t = await t.restart(() => writeFile(join(t.manifests, 'rules.yaml'), RULES));
    expect((await served()).revision).toBe(3);
  });
});

describe('rule status', () => {
  it('puts an Approved rule into bundles and reports it Enforced', async () => {
    t = await startTestService();
    await t.write('rules.yaml', RULES + rule('approved', '', 'Approved'));
    expect(status('Rule', 'approved')).toMatchObject({
      phase: 'Enforced',
      observedGeneration: 1,
      translation: { status: 'Current', generation: 1 },
    });
    expect((status('Rule', 'approved')['translation'] as { rego: string }).rego).toContain('input.principal.level > 1');
    expect(status('Bundle', 'docs')).toMatchObject({ revision: 2, ruleCount: 2 });
    const allow = (await (
      await t.decide({ subject: { type: 'user', id: 'a', level: 2 }, action: 'read', resource: { type: 'document', id: 'd' } })
    ).json()) as { decision: string; policyId: string };
    expect(allow).toMatchObject({ decision: 'allow', policyId: 'acme/approved' });
  });

  it('leaves Draft, Proposed, Suspended and Archived rules out, and says so', async () => {
    t = await startTestService();
    await t.write('rules.yaml', RULES + ['Draft', 'Proposed', 'Suspended', 'Archived'].map((s) => rule(s.toLowerCase(), '', s)).join(''));
    expect((await served()).revision).toBe(1);
    for (const s of ['Draft', 'Proposed', 'Suspended', 'Archived']) {
      expect(status('Rule', s.toLowerCase())).toMatchObject({
        phase: s,
        conditions: [{ type: 'Ready', status: 'True', reason: 'NotDeployed' }],
      });
    }
  });

  it('marks an invalid edit Invalid with the position, keeps the last good version in force, and recovers', async () => {
    t = await startTestService();
    const before = await served();
    await t.write('rules.yaml', RULES.replace('principal.team == resource.team', 'principal.team ==== resource.team'));
    expect(status('Rule', 'team-documents')).toMatchObject({
      phase: 'Invalid',
      observedGeneration: 2,
      translation: { status: 'Stale', generation: 1 },
      conditions: [
        { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: expect.stringMatching(/syntax error at line 1, column \d+/) },
      ],
    });
    expect(await served()).toEqual(before);
    const allowed = (await (
      await t.decide({ subject: { type: 'user', id: 'a', team: 'x' }, action: 'read', resource: { type: 'document', id: 'd', team: 'x' } })
    ).json()) as { decision: string };
    expect(allowed.decision).toBe('allow');
    await t.write('rules.yaml', RULES.replace('principal.team == resource.team', 'principal.team != resource.team'));
    expect(status('Rule', 'team-documents')).toMatchObject({
      phase: 'Enforced',
      observedGeneration: 3,
      translation: { status: 'Current', generation: 3 },
    });
    expect((await served()).revision).toBe(2);
  });

  it('reports a spec the schema refuses as InvalidSpec without disturbing other rules', async () => {
    t = await startTestService();
    await t.write('more.yaml', rule('broken').replace('actions: [read]', 'actions: []') + rule('fine'));
    expect(status('Rule', 'broken')).toMatchObject({
      phase: 'Invalid',
      conditions: [{ reason: 'InvalidSpec', message: expect.stringMatching(/spec\.actions/) }],
    });
    expect(status('Rule', 'fine')).toMatchObject({ phase: 'Enforced' });
    expect((await served()).revision).toBe(2);
  });

  it('re-translates when the regenerate annotation changes, without moving any revision', async () => {
    t = await startTestService();
    await t.write(
      'rules.yaml',
      RULES.replace('namespace: acme }', 'namespace: acme, annotations: { acl.policyagent.dev/regenerate: "2026-11-22" } }'),
    );
    expect(status('Rule', 'team-documents')).toMatchObject({ translation: { status: 'Current', regenerate: '2026-11-22', generation: 1 } });
    expect((await served()).revision).toBe(1);
  });

  it('writes status only when it changed', async () => {
    t = await startTestService();
    const file = join(t.stateDir, 'objects', 'acme', 'rule', 'team-documents.yaml');
    const before = await readFile(file, 'utf8');
    const writes: string[] = [];
    const original = t.service.source.writer.writeStatus;
    t.service.source.writer.writeStatus = async (key, s) => {
      writes.push(`${key.kind}/${key.name}`);
      return original(key, s);
    };
    for (const kind of ['Rule', 'Connector', 'Bundle'] as const) {
      for (const o of t.service.source.list(kind)) t.service.controller.enqueue({ kind, namespace: 'acme', name: o.metadata.name });
    }
    await t.service.controller.idle();
    expect(writes).toEqual([]);
    expect(await readFile(file, 'utf8')).toBe(before);
  });
});

describe('bundle and connector status', () => {
  it('shows a bundle Pending while its connector is missing, and Ready once it exists', async () => {
    t = await startTestService();
    const connectors = BASE_MANIFESTS['connectors.yaml'] as string;
    const withoutGateways = connectors
      .split('---')
      .filter((d) => !d.includes('name: gateways,'))
      .join('---');
    await t.write('connectors.yaml', withoutGateways);
    // Other conditions (Signed, KeyRotated) sit between these: each is looked up by its type.
    const conditions = (): Record<string, unknown>[] => (status('Bundle', 'docs') as { conditions: Record<string, unknown>[] }).conditions;
    const condition = (type: string): Record<string, unknown> | undefined => conditions().find((c) => c['type'] === type);
    expect(status('Bundle', 'docs')).toMatchObject({ phase: 'Pending' });
    expect(conditions()[0]).toMatchObject({ reason: 'ConnectorNotFound' });
    expect(condition('RolledOut')).toMatchObject({ status: 'Unknown' });
    await t.write('connectors.yaml', connectors);
    expect(status('Bundle', 'docs')).toMatchObject({ phase: 'Ready', revision: 1 });
    expect(conditions()[0]).toMatchObject({ reason: 'Built' });
    expect(condition('RolledOut')).toMatchObject({ status: 'Unknown', reason: 'NoAgents' });
    expect(condition('Signed')).toMatchObject({ status: 'True', reason: 'Signed' });
    expect(condition('KeyRotated')).toMatchObject({ status: 'True' });
    expect(status('Connector', 'gateways')).toMatchObject({ phase: 'Active', bundles: ['docs'] });
  });

  it('keeps the annotations of the state copy current without moving the generation', async () => {
    t = await startTestService();
    await t.write('rules.yaml', RULES.replace('namespace: acme }', 'namespace: acme, annotations: { note: hello } }'));
    const saved = t.service.state.object('Rule', 'acme', 'team-documents');
    expect(saved?.generation).toBe(1);
    expect((saved?.raw['metadata'] as { annotations?: Record<string, string> } | undefined)?.annotations?.['note']).toBe('hello');
  });
});

describe('the manifests folder', () => {
  it('reports a bad document by file and position; a file with broken YAML changes nothing until fixed', async () => {
    t = await startTestService();
    const typo = `apiVersion: acl.policyagent.dev/v1alpha1
kind: Rul
metadata: { name: typo, namespace: acme }`;
    await t.write(
      'bad.yaml',
      `${rule('good')}
---
${typo}
---
kind: [unclosed
`,
    );
    expect(t.service.source.problems()).toEqual([
      { source: 'bad.yaml', document: 2, name: 'typo', message: expect.stringMatching(/not a resource of ours/) },
      { source: 'bad.yaml', document: 3, name: undefined, message: expect.stringMatching(/invalid YAML/) },
    ]);
    expect(await readFile(join(t.stateDir, 'problems.yaml'), 'utf8')).toMatch(/bad\.yaml[\s\S]*document: 2/);
    // Broken YAML may be a file caught half-written: none of it is used.
    expect(t.service.source.get('Rule', 'acme', 'good')).toBeUndefined();
    await t.write(
      'bad.yaml',
      `${rule('good')}
---
${typo}
`,
    );
    expect(t.service.source.problems()).toEqual([
      { source: 'bad.yaml', document: 2, name: 'typo', message: expect.stringMatching(/not a resource of ours/) },
    ]);
    expect(status('Rule', 'good')).toMatchObject({ phase: 'Enforced' });
  });

  it('keeps the objects of a file that stops parsing instead of deleting them', async () => {
    t = await startTestService();
    await t.write('more.yaml', rule('kept'));
    const before = await served();
    await t.write('more.yaml', `${rule('kept')}\n  bad: [indentation`);
    expect(t.service.source.get('Rule', 'acme', 'kept')).toBeDefined();
    expect(await served()).toEqual(before);
    expect(t.service.source.problems()).toHaveLength(1);
    await t.write('more.yaml', undefined);
    expect((await served()).revision).toBe(before.revision + 1);
    expect(t.service.source.problems()).toEqual([]);
  });

  it('refuses a second definition of the same object and keeps the first', async () => {
    t = await startTestService();
    await t.write('zz-dup.yaml', RULES.replace('actions: [read, write]', 'actions: [delete]'));
    expect(t.service.source.problems()).toEqual([
      { source: 'zz-dup.yaml', document: 1, name: 'team-documents', message: expect.stringMatching(/already defined in rules\.yaml/) },
    ]);
    expect((await served()).revision).toBe(1);
  });

  it('sees an edit of a file it had parsed before, whatever its size and mtime', async () => {
    t = await startTestService({ serviceOptions: { racyWindowMs: 0 } });
    const { utimes, writeFile } = await import('node:fs/promises');
    const file = join(t.manifests, 'old.yaml');
    const hourAgo = new Date(Date.now() - 3_600_000);
    await writeFile(file, rule('aged'));
    await utimes(file, hourAgo, hourAgo);
    await t.settle();
    await t.settle(); // now served from the parsed-file cache
    expect(status('Rule', 'aged')).toMatchObject({ phase: 'Enforced' });
    await writeFile(file, rule('aged', '', 'Proposed').replace('Proposed', 'Archived'));
    await utimes(file, hourAgo, hourAgo); // same mtime as before: only ctime and content differ
    await t.settle();
    expect(status('Rule', 'aged')).toMatchObject({ phase: 'Archived' });
  });

  it('sees changes by itself when watched', async () => {
    t = await startTestService({ serviceOptions: { debounceMs: 20 } });
    const { writeFile } = await import('node:fs/promises');
    const changed = new Promise<void>((resolve) =>
      t.service.store.onBundleChange((bundles) => {
        if (bundles.some((b) => b.name === 'docs')) resolve();
      }),
    );
    await writeFile(join(t.manifests, 'watched.yaml'), rule('watched'));
    await changed;
    await t.service.controller.idle();
    expect(status('Rule', 'watched')).toMatchObject({ phase: 'Enforced' });
  });

  it('reads the folder again every --rescan-seconds, so a change no watch can see still applies', async () => {
    const { mkdir, symlink, writeFile } = await import('node:fs/promises');
    t = await startTestService({
      config: { folder: { settleMs: 0, rescanSeconds: 1, maxManifestBytes: 1 << 20, maxManifestDocuments: 100 } },
    });
    // A link into a folder the walk never reads (a dot-folder), whose target appears only later: the
    // file is written where nothing is watched, as on a network filesystem that tells no change.
    await mkdir(join(t.manifests, '.store'));
    await symlink('.store/late.yaml', join(t.manifests, 'late.yaml'));
    await t.settle();
    expect(t.service.source.get('Rule', 'acme', 'late')).toBeUndefined();
    const changed = new Promise<void>((resolve) =>
      t.service.store.onBundleChange((bundles) => {
        if (bundles.some((b) => b.name === 'docs')) resolve();
      }),
    );
    await writeFile(join(t.manifests, '.store', 'late.yaml'), rule('late'));
    await changed;
    await t.service.controller.idle();
    expect(status('Rule', 'late')).toMatchObject({ phase: 'Enforced' });
  });

  it('ignores Secrets that are not API keys, with a problem saying why', async () => {
    t = await startTestService();
    await t.write('secret.yaml', 'apiVersion: v1\nkind: Secret\nmetadata: { name: db, namespace: acme }\nstringData: { password: x }\n');
    expect(t.service.source.problems()).toEqual([
      { source: 'secret.yaml', document: 1, name: 'db', message: expect.stringMatching(/not labelled acl\.policyagent\.dev\/api-key/) },
    ]);
  });
});

describe('API keys', () => {
  it('come and go with their Secret, and short keys are refused', async () => {
    t = await startTestService();
    const body = { subject: { type: 'user', id: 'a' }, action: 'read', resource: { type: 'document', id: 'd' } };
    const key = 'another-key-for-acme-0123456789';
    const secret = (token: string): string => apiKeySecret('acme', 'k2', token);
    expect((await t.decide(body, { Authorization: `Bearer ${key}` })).status).toBe(401);
    await t.write('k2.yaml', secret(key));
    expect((await t.decide(body, { Authorization: `Bearer ${key}` })).status).toBe(200);
    await t.write('k2.yaml', secret('short'));
    expect((await t.decide(body, { Authorization: 'Bearer short' })).status).toBe(401);
    expect((await t.decide(body, { Authorization: `Bearer ${key}` })).status).toBe(401);
  });
});
