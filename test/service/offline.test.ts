// The offline pipeline (pipeline/offline.ts): `render` builds a folder through the reader, source,
// controller and store `serve` runs, so what it writes is what is served, byte for byte, by a serve
// with --unsigned-bundles (render holds no key); a signed serve adds .signatures.json to the same files.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOffline, type Offline } from '../../src/pipeline/index.ts';
import { writeConformanceFolder } from '../support/conformance.ts';
import { startTestService } from '../support/service.ts';
import { tarFile } from '../support/tar.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'src', 'cli.ts');
const EXAMPLES = join(ROOT, 'examples');

interface Archive {
  readonly bytes: Buffer;
  readonly etag: string;
}

let tmp = '';
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'acl-offline-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** `render --out`: every bundle's archive as written, with the ETag the listing prints for it. */
function rendered(manifests: string, out: string): Map<string, Archive> {
  const r = spawnSync(process.execPath, [CLI, 'render', '--manifests', manifests, '--out', out, '--no-rego'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  expect(r.status, `${r.stderr}${r.stdout}`).toBe(0);
  const archives = new Map<string, Archive>();
  for (const block of r.stdout.split('\n\n').filter((b) => b.startsWith('Bundle '))) {
    const key = /^Bundle (\S+)/.exec(block)?.[1] ?? '';
    const etag = /etag: +(\S+)/.exec(block)?.[1] ?? '';
    archives.set(key, { bytes: readFileSync(join(out, `${key}.tar.gz`)), etag });
  }
  return archives;
}

/** What `serve` serves for every bundle it holds, fetched the way OPA fetches it (the connector's token). */
async function served(manifests: string, stateDir: string, unsignedBundles: boolean): Promise<Map<string, Archive>> {
  const t = await startTestService({ dirs: { manifests, stateDir }, config: { unsignedBundles } });
  const archives = new Map<string, Archive>();
  try {
    for (const tenant of t.service.store.snapshot().tenants.values()) {
      for (const b of tenant.bundles.values()) {
        const token = await t.token(b.tenant, b.connector);
        const res = await t.bundle(b.tenant, b.connector, b.name, { Authorization: `Bearer ${token}` });
        expect(res.status, `${b.tenant}/${b.name}`).toBe(200);
        archives.set(`${b.tenant}/${b.name}`, { bytes: Buffer.from(await res.arrayBuffer()), etag: res.headers.get('etag') ?? '' });
      }
    }
  } finally {
    await t.stop();
  }
  return archives;
}

function expectSameArchives(fromRender: Map<string, Archive>, fromServe: Map<string, Archive>): void {
  expect([...fromRender.keys()].sort()).toEqual([...fromServe.keys()].sort());
  for (const [key, r] of fromRender) {
    const s = fromServe.get(key);
    expect(r.etag, key).toBe(s?.etag);
    expect(s && r.bytes.equals(s.bytes), key).toBe(true);
  }
}

/** A signed serve's archives hold render's .manifest and policy.rego as they are, and a .signatures.json. */
function expectSameFilesSigned(fromRender: Map<string, Archive>, fromSignedServe: Map<string, Archive>): void {
  expect([...fromRender.keys()].sort()).toEqual([...fromSignedServe.keys()].sort());
  for (const [key, r] of fromRender) {
    const s = fromSignedServe.get(key)?.bytes ?? Buffer.alloc(0);
    for (const file of ['.manifest', 'policy.rego']) expect(tarFile(s, file), `${key} ${file}`).toBe(tarFile(r.bytes, file));
    expect(tarFile(r.bytes, '.signatures.json'), key).toBeUndefined();
    expect(tarFile(s, '.signatures.json'), key).toMatch(/^\{"signatures":\["/);
  }
}

async function built(files: Record<string, string>): Promise<Offline> {
  const dir = await mkdtemp(join(tmp, 'folder-'));
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
  const result = await buildOffline(dir);
  if ('unreadable' in result) throw new Error(result.unreadable);
  return result;
}

describe('render and serve', () => {
  it('agree on the bytes and ETag of every example bundle (serve --unsigned-bundles), and on its files when serve signs', async () => {
    const fromRender = rendered(EXAMPLES, join(tmp, 'examples-out'));
    expect(fromRender.size).toBe(3);
    expectSameArchives(fromRender, await served(EXAMPLES, join(tmp, 'examples-state'), true));
    expectSameFilesSigned(fromRender, await served(EXAMPLES, join(tmp, 'examples-signed-state'), false));
  });

  it('agree on the bytes and ETag of every bundle of every conformance tenant (serve --unsigned-bundles)', async () => {
    const dir = join(tmp, 'conformance');
    const tenants = await writeConformanceFolder(dir);
    const fromRender = rendered(dir, join(tmp, 'conformance-out'));
    expect(fromRender.size).toBe(tenants.length * 2);
    expectSameArchives(fromRender, await served(dir, join(tmp, 'conformance-state'), true));
  });
});

describe('buildOffline', () => {
  it('reads good documents and reports each bad one with its position, without losing the others', async () => {
    const text = [
      'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: ok}\nspec: {subjectType: user, actions: [read], resourceType: document}',
      'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: bad}\nspec: {subjectType: user, actions: [], resourceType: document}',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}',
      'just a string',
      '',
    ].join('\n---\n');
    const offline = await built({ 'rules.yaml': text });
    expect(offline.objects.map((o) => [o.kind, o.namespace, o.name, o.status?.['phase']])).toEqual([
      ['Rule', 'default', 'ok', 'Draft'],
      ['Rule', 'default', 'bad', 'Invalid'],
    ]);
    expect(JSON.stringify(offline.objects[1]?.status)).toContain('spec.actions');
    expect(offline.problems.map((p) => [p.document, p.name, p.message.split(':')[0]])).toEqual([
      [3, 'other', 'not a resource of ours'],
      [4, undefined, 'a document must be a mapping with apiVersion, kind and metadata'],
    ]);
  });

  it('reports YAML syntax errors and duplicate keys', async () => {
    const offline = await built({ 'dup.yaml': 'kind: Rule\nkind: Rule\n' });
    expect(offline.problems).toHaveLength(1);
    expect(offline.problems[0]?.message).toMatch(/invalid YAML/);
    expect(offline.objects).toEqual([]);
  });

  it('builds what serve would serve: an Approved rule goes into the bundle, as serve deploys it', async () => {
    const rule = (name: string, state: string): string =>
      `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: ${name}, namespace: t}\nspec: {state: ${state}, subjectType: user, actions: [read], resourceType: doc}\n`;
    const offline = await built({
      'rules.yaml': [rule('enforced', 'Enforced'), rule('approved', 'Approved'), rule('draft', 'Draft')].join('---\n'),
      'bundle.yaml':
        'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata: {name: c, namespace: t}\nspec: {}\n---\napiVersion: acl.policyagent.dev/v1alpha1\nkind: Bundle\nmetadata: {name: b, namespace: t}\nspec: {connector: c}\n',
    });
    const bundle = offline.snapshot.tenants.get('t')?.bundles.get('b');
    expect(bundle?.built.revision).toBe(1);
    expect(bundle?.source.rules.map((r) => r.name).sort()).toEqual(['approved', 'enforced']);
  });

  it('says a folder that does not exist cannot be read, and builds nothing', async () => {
    const result = await buildOffline(join(tmp, 'missing'));
    expect(result).toEqual({ unreadable: expect.stringContaining('ENOENT') });
    await mkdir(join(tmp, 'empty'));
    const empty = await buildOffline(join(tmp, 'empty'));
    expect('files' in empty && empty.files).toEqual([]);
  });
});
