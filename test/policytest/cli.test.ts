// `acl-operator test` as a user runs it: the examples pass, a failing case exits 1 with its
// explanation, reports go to a file, and every kind of bad input exits 2 with a clear message.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, ROOT, stackLines } from './support.ts';

const RULE = `apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: {name: team-documents, namespace: shop}
spec: {state: Enforced, subjectType: user, actions: [read], resourceType: document, condition: principal.team == resource.team}
`;
const CASES = `tenant: shop
cases:
  - {name: same team, subject: {type: user, id: u, properties: {team: blue}}, action: read, resource: {type: document, id: d, properties: {team: blue}}, expect: allow, rule: team-documents}
  - name: other team, wrongly expected to pass
    subject: {type: user, id: u, properties: {team: red}}
    action: read
    resource: {type: document, id: d, properties: {team: blue}}
    expect: allow
`;

let tmp = '';
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'acl-ptest-cli-'));
  await mkdir(join(tmp, 'shop', 'tests'), { recursive: true });
  await writeFile(join(tmp, 'shop', 'rules.yaml'), RULE);
  await writeFile(join(tmp, 'shop', 'tests', 'shop.test.yaml'), CASES);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('acl-operator test', () => {
  it('passes the examples with exit status 0, natively when no OPA is given', () => {
    const r = cli(['test', '--manifests', 'examples']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /^acl-operator test --manifests examples: 2 test files, 43 cases; native evaluator only \(--opa or OPA_BIN adds OPA\)\n/,
    );
    expect(r.stdout).toContain('examples/acme.test.yaml: 28 cases, all passed\nexamples/records.test.yaml: 15 cases, all passed\n');
    expect(r.stdout).toMatch(/\n43 cases: 43 passed, 0 failed \([\d,]+ cases\/s\)\n$/);
  });

  it('exits 1 on a failed case and shows where, the request, expected and got, and why', () => {
    const r = cli(['test', '--manifests', join(tmp, 'shop')]);
    expect(r.status).toBe(1);
    const file = join(tmp, 'shop', 'tests', 'shop.test.yaml');
    expect(r.stdout).toContain(`FAIL  ${file}:4  other team, wrongly expected to pass
  tenant:     shop
  request:    {"principal":{"team":"red","type":"user","id":"u"},"action":"read","resource":{"team":"blue","type":"document","id":"d"},"context":{},"actionProperties":{}}
  expected:   allow
  got:        deny
  why:        Rule shop/team-documents did not match: its condition principal.team == resource.team is false
  failed:     expected allow, got deny
`);
    expect(r.stdout).toContain('2 cases: 1 passed, 1 failed');
  });

  it('writes the report in the format asked to --out, and says so on stderr', async () => {
    const out = join(tmp, 'report.xml');
    const r = cli(['test', '--manifests', join(tmp, 'shop'), '--format', 'junit', '--out', out]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^Wrote ${out}: 2 cases: 1 passed, 1 failed`));
    expect(await readFile(out, 'utf8')).toContain('<testsuites name="acl-operator test" tests="2" failures="1"');
    const unwritable = cli(['test', '--manifests', join(tmp, 'shop'), '--out', join(tmp, 'missing', 'report.txt')]);
    expect(unwritable.status).toBe(2);
    expect(unwritable.stderr).toContain(`--out ${join(tmp, 'missing', 'report.txt')}: ENOENT`);
  });

  it('runs only the test files --tests names (a file, or a folder), with ACL_MANIFESTS as the manifests', async () => {
    const only = join(tmp, 'only.test.yaml');
    await writeFile(only, CASES.split('  - name: other team')[0] ?? '');
    const file = cli(['test', '--tests', only], { ACL_MANIFESTS: join(tmp, 'shop') });
    expect(file.status).toBe(0);
    expect(file.stdout).toContain(`${only}: 1 case, all passed`);
    const folder = cli(['test', '--manifests', 'examples', '--tests', join(ROOT, 'examples')]);
    expect(folder.stdout).toContain('2 test files, 43 cases');
  });

  it('exits 2 on bad usage, saying what is wrong', () => {
    const runs = [
      { args: ['test'], says: 'test needs --manifests <dir> (or ACL_MANIFESTS)' },
      { args: ['test', '--manifests', 'examples', '--format', 'xml'], says: '--format xml: use text, junit, tap or json' },
      { args: ['test', '--manifests', 'examples', '--opa', ''], says: '--opa needs the path of an opa binary' },
      { args: ['test', '--manifest', 'examples'], says: "Unknown option '--manifest'" },
      { args: ['test', '--manifests', join(tmp, 'nowhere')], says: `cannot read manifests from ${join(tmp, 'nowhere')}: ENOENT` },
      { args: ['test', '--manifests', join(tmp, 'shop', 'rules.yaml')], says: 'not a folder' },
      {
        args: ['test', '--manifests', 'examples', '--tests', join(tmp, 'shop', 'rules.yaml.missing')],
        says: 'cannot read test files from',
      },
      {
        args: ['test', '--manifests', join(ROOT, 'deploy')],
        says: `no test files (*.test.yaml, *.test.yml) under ${join(ROOT, 'deploy')}`,
      },
    ];
    for (const run of runs) {
      const r = cli(run.args);
      expect({ args: run.args, status: r.status, says: r.stderr.includes(run.says) }).toEqual({ args: run.args, status: 2, says: true });
      expect(stackLines(r.stderr)).toEqual([]);
    }
    expect(cli(['test', '--help']).stdout).toContain('Options of test');
  });

  it('exits 2 with the problems render would list when the manifests have any, deciding nothing', async () => {
    const dir = join(tmp, 'broken');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'rules.yaml'), RULE.replace('principal.team == resource.team', 'principal.team +'));
    await writeFile(join(dir, 'shop.test.yaml'), CASES);
    const r = cli(['test', '--manifests', dir]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`1 problem(s) in the manifests of ${dir}; no case was decided:\n  - Rule shop/team-documents is Invalid: `);
  });
});

describe('test files beside the manifests', () => {
  it('are never read as manifests by render (or serve, which reads the folder the same way)', async () => {
    const dir = join(tmp, 'beside');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'rules.yaml'), RULE);
    await writeFile(join(dir, 'rules.test.yaml'), 'this: is [not a manifest\n');
    const r = cli(['render', '--manifests', dir, '--no-rego']);
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(`Read 1 file(s) from ${dir}`);
    expect(r.stdout).not.toContain('problem');
  });
});

describe('docs/testing.md', () => {
  it('passes its sample test file against examples/, so the format it shows is the one the command reads', async () => {
    const doc = await readFile(join(ROOT, 'docs', 'testing.md'), 'utf8');
    const sample = /### The format\n+```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(sample, 'docs/testing.md lost its "### The format" sample').toBeDefined();
    const file = join(tmp, 'docs-sample.test.yaml');
    await writeFile(file, sample ?? '');
    const r = cli(['test', '--manifests', 'examples', '--tests', file]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/5 cases: 5 passed, 0 failed/);
    expect(r.status).toBe(0);
  });
});
