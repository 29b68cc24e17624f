import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

  it('refuses a folder without manifests alike in render, lint and test: the same words, exit status 2', () => {
    const empty = join(tmp, 'no-manifests');
    mkdirSync(join(empty, 'sub'), { recursive: true });
    writeFileSync(join(empty, 'README.md'), 'not a manifest\n');
    // test is given its test file elsewhere: with none under the folder it would stop at that first.
    const tests = ['--tests', join(ROOT, 'examples', 'acme.test.yaml')];
    for (const command of ['render', 'lint', 'test']) {
      const r = cli(command, '--manifests', empty, ...(command === 'test' ? tests : []));
      expect({ command, status: r.status, stderr: r.stderr }).toEqual({
        command,
        status: 2,
        stderr: `no .yaml or .yml files in ${empty}\n`,
      });
    }
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

/** A folder of manifests under the temporary folder, from file name → text. */
function folder(name: string, files: Record<string, string>): string {
  const dir = join(tmp, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

const TODO = {
  'rules.yaml': [
    'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: can-read-own, namespace: todo}\nspec: {state: Enforced, subjectType: user, actions: [read], resourceType: todo, condition: "resource.properties.ownerID == principal.properties.email"}',
    'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: can-write, namespace: todo}\nspec: {subjectType: user, actions: [write], resourceType: todo}',
  ].join('\n---\n'),
  'bundle.yaml':
    'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata: {name: c, namespace: todo}\nspec: {}\n---\napiVersion: acl.policyagent.dev/v1alpha1\nkind: Bundle\nmetadata: {name: b, namespace: todo}\nspec: {connector: c}\n',
};

describe('acl-operator lint', () => {
  it('finds nothing in the examples, even with --strict', () => {
    const r = cli('lint', '--manifests', 'examples', '--strict');
    expect(r.stdout).toBe('0 lint finding(s) in 7 file(s) of examples\n');
    expect(r.status).toBe(0);
  });

  it('prints one line per finding with file, object, code, what and fix, and a count; exit 0, or 1 with --strict', () => {
    const dir = folder('lint-todo', TODO);
    const r = cli('lint', '--manifests', dir);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      'rules.yaml: Rule todo/can-read-own: PropertiesPath: the condition reads resource.properties.ownerID, but a request\'s resource.properties are flattened into resource, so it looks for a property named "properties" that requests do not send. Fix: read resource.ownerID instead.',
      'rules.yaml: Rule todo/can-read-own: PropertiesPath: the condition reads principal.properties.email, but a request\'s subject.properties are flattened into principal, so it looks for a property named "properties" that requests do not send. Fix: read principal.email instead.',
      'rules.yaml: Rule todo/can-write: StateNotSet: spec.state is not set, so the rule is a Draft: the service does not decide with it and no bundle carries it. Fix: write state: Enforced to deploy it, or state: Draft to say it is a draft.',
      `3 lint finding(s) in 2 file(s) of ${dir}`,
      '',
    ]);
    expect(cli('lint', '--manifests', dir, '--strict').status).toBe(1);
  });

  it('prints the findings as JSON with --format json', () => {
    const r = cli('lint', '--manifests', folder('lint-json', TODO), '--format', 'json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { findings: Record<string, unknown>[]; problems: string[] };
    expect(out.problems).toEqual([]);
    expect(out.findings.map((f) => [f['code'], f['kind'], f['namespace'], f['name'], f['source']])).toEqual([
      ['PropertiesPath', 'Rule', 'todo', 'can-read-own', 'rules.yaml'],
      ['PropertiesPath', 'Rule', 'todo', 'can-read-own', 'rules.yaml'],
      ['StateNotSet', 'Rule', 'todo', 'can-write', 'rules.yaml'],
    ]);
    expect(out.findings[0]).toMatchObject({ hint: 'read resource.ownerID instead' });
  });

  it('refuses invalid manifests with the problem lines render prints, exit 2, and still lints the valid ones', () => {
    const dir = folder('lint-invalid', {
      ...TODO,
      'bad.yaml':
        'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: bad, namespace: todo}\nspec: {state: Enforced, subjectType: user, actions: [read], resourceType: todo, condition: "principal.a + 1 > 2"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: todo}\n',
    });
    const r = cli('lint', '--manifests', dir);
    expect(r.status).toBe(2);
    const rendered = cli('render', '--manifests', dir, '--no-rego').stdout;
    const problems = r.stdout.split('\n').filter((l) => l.startsWith('  - '));
    expect(problems).toHaveLength(2);
    for (const p of problems) expect(rendered).toContain(p);
    expect(r.stdout).toContain('Rule todo/bad is Invalid: addition "+" is not supported (at line 1, column 13)');
    expect(r.stdout).toContain('StateNotSet');
    expect(r.stdout).not.toMatch(/Rule todo\/bad: /);
    expect(cli('lint', '--manifests', dir, '--format', 'json').status).toBe(2);
  });

  it('explains bad usage with exit status 2 and no stack trace', () => {
    const empty = folder('lint-empty', {});
    const cases: [string[], RegExp][] = [
      [['lint'], /lint needs --manifests <dir>/],
      [['lint', '--manifests', 'examples', '--format', 'xml'], /--format must be text or json, not "xml"/],
      [['lint', '--manifest', 'examples'], /Unknown option '--manifest'/],
      [['lint', '--manifests', join(tmp, 'missing')], /cannot read manifests from .*missing: ENOENT/],
      [['lint', '--manifests', join(ROOT, 'package.json')], /cannot read manifests from .*package\.json: not a folder/],
      [['lint', '--manifests', empty], /no \.yaml or \.yml files in/],
    ];
    for (const [args, message] of cases) {
      const r = cli(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(cli('lint', '--help').stdout).toContain('Options of lint:');
  });

  it('is shown by render after its problems, without changing its exit status', () => {
    const r = cli('render', '--manifests', folder('render-lint', TODO), '--no-rego');
    expect(r.status).toBe(0);
    const block = r.stdout.slice(r.stdout.indexOf('\n3 lint finding(s):\n'));
    expect(block.split('\n').filter((l) => l.startsWith('  - '))).toHaveLength(3);
    expect(block).toContain('  - rules.yaml: Rule todo/can-write: StateNotSet: ');
    expect(cli('render', '--manifests', 'examples', '--no-rego').stdout).not.toContain('lint finding');
  });
});
