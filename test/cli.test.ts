import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'src', 'cli.ts');
const tmp = mkdtempSync(join(tmpdir(), 'acl-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('acl-operator render', () => {
  it('translates the examples cleanly and lists every bundle with its two files', () => {
    const r = cli('render', '--manifests', 'examples');
    expect(r.stderr).toContain('Read 7 file(s) from examples');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('11 rules (10 Enforced, 0 Invalid), 2 connectors, 3 bundles, 2 directories (6 entities).');
    expect(r.stdout).toContain('Bundle records/records  connector record-services  Rego v0  revision 1');
    expect(r.stdout).toContain('"alice": {"groups": ["staff"], "role": "member"}');
    expect(r.stdout).toContain('Bundle acme/gateway-documents  connector gateways  Rego v0  revision 1');
    expect(r.stdout).toContain('Bundle acme/gateway-all-v1  connector gateways  Rego v1  revision 1');
    expect(r.stdout).toMatch(/-rw-r--r-- 0\/0 +\d+ 1970-01-01 00:00 \.manifest/);
    expect(r.stdout).toContain('package acl');
    expect(r.stdout).not.toContain('problem');
  });

  it('filters the document bundle to rules about documents', () => {
    const r = cli('render', '--manifests', 'examples', '--no-rego');
    const block = r.stdout.split('\n\n').find((b) => b.startsWith('Bundle acme/gateway-documents'));
    expect(block).toContain('rules:   admins-manage-documents, indexer-reads-published, owners-delete-documents, team-documents');
    expect(r.stdout).not.toContain('package acl');
  });

  it('writes the archives with --out, byte-identical on every run', () => {
    const out = join(tmp, 'out');
    expect(cli('render', '--manifests', 'examples', '--out', out, '--no-rego').status).toBe(0);
    const first = readFileSync(join(out, 'acme', 'gateway-documents.tar.gz'));
    expect(gunzipSync(first).toString('latin1')).toContain('policy.rego');
    cli('render', '--manifests', 'examples', '--out', out, '--no-rego');
    expect(readFileSync(join(out, 'acme', 'gateway-documents.tar.gz')).equals(first)).toBe(true);
  });

  it('reports an invalid rule with its position and a bundle without connector, and exits 1', () => {
    const dir = join(tmp, 'bad');
    rmSync(dir, { recursive: true, force: true });
    spawnSync('mkdir', ['-p', dir]);
    writeFileSync(
      join(dir, 'rules.yaml'),
      [
        'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: good, namespace: t}\nspec: {state: Enforced, subjectType: user, actions: [read], resourceType: doc}',
        'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: bad, namespace: t}\nspec: {state: Enforced, subjectType: user, actions: [read], resourceType: doc, condition: "principal.a + 1 > 2"}',
        'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Bundle\nmetadata: {name: b, namespace: t}\nspec: {connector: nobody}',
      ].join('\n---\n'),
    );
    const r = cli('render', '--manifests', dir, '--no-rego');
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('Rule t/bad is Invalid: addition "+" is not supported (at line 1, column 13)');
    expect(r.stdout).toContain('Bundle t/b names connector nobody, which does not exist in t');
    expect(r.stdout).toContain('rules:   good');
  });

  it('explains bad usage with exit status 2', () => {
    expect(cli('render').status).toBe(2);
    expect(cli('render', '--manifest', 'x').stderr).toMatch(/Unknown option '--manifest'/);
    expect(cli('frobnicate').stderr).toContain('unknown command "frobnicate"');
    expect(cli('render', '--manifests', join(tmp, 'missing')).stderr).toContain('cannot read manifests');
    expect(cli('--help').status).toBe(0);
  });

  it('says a file given as the manifests folder is not a folder, with exit status 2', () => {
    const file = join(tmp, 'not-a-folder.yaml');
    writeFileSync(file, 'a: 1\n');
    const r = cli('render', '--manifests', file);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`cannot read manifests from ${file}: not a folder\n`);
  });

  it('says which archive --out could not write, with exit status 2 and no stack trace', () => {
    const blocker = join(tmp, 'blocker');
    writeFileSync(blocker, 'a file where a folder must go\n');
    const r = cli('render', '--manifests', 'examples', '--no-rego', '--out', join(blocker, 'out'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--out .*blocker\/out: cannot write .*\.tar\.gz: ENOTDIR/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
