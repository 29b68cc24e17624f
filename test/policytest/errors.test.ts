// A barrage of malformed test files: each is an error at its line and column with a message saying
// what to fix, never a stack trace, and nothing is decided (exit 2 through the CLI).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Offline } from '../../src/pipeline/index.ts';
import { cli, offlineOf, ROOT, runText, stackLines } from './support.ts';

const CASE = '{name: c, subject: {type: user, id: u}, action: read, resource: {type: document, id: d}, expect: allow}';

/** A malformed file and its errors, each `line:column: fragment of the message`. */
const BARRAGE: readonly { name: string; text: string; errors: string[] }[] = [
  { name: 'empty', text: '', errors: ['1:1: the file is empty'] },
  { name: 'comments-only', text: '# nothing here\n', errors: ['1:1: the file is empty'] },
  { name: 'broken-flow', text: 'tenant: acme\ncases:\n  - {name: c, expect: allow\n', errors: ['4:1: invalid YAML'] },
  { name: 'tab-indent', text: 'tenant: acme\ncases:\n\t- name: c\n', errors: ['3:1: invalid YAML'] },
  {
    name: 'duplicate-key',
    text: `tenant: acme\ntenant: records\ncases:\n  - ${CASE}\n`,
    errors: ['2:1: invalid YAML: Map keys must be unique'],
  },
  {
    name: 'null-key',
    text: `tenant: acme\ncases:\n  - ${CASE}\nentities:\n  null: {type: user, id: u}\n`,
    errors: ['5:3: entities: a name is missing or null: write the name, in quotes if it is the text "null" or "~"'],
  },
  {
    name: 'yaml-1.1-tag',
    text: `tenant: acme\ncases:\n  - ${CASE.replace('id: d}', 'id: !!timestamp 2026-11-24}')}\n`,
    errors: ['3:90: invalid YAML: Unresolved tag: tag:yaml.org,2002:timestamp'],
  },
  {
    name: 'two-documents',
    text: `cases:\n  - ${CASE}\n---\ncases: []\n`,
    errors: ['3:1: invalid YAML: a test file holds one YAML document'],
  },
  {
    name: 'a-list',
    text: '- name: c\n  expect: allow\n',
    errors: ['1:1: a test file is a mapping with tenant, entities, defaults, cases; this file holds a list'],
  },
  {
    name: 'a-scalar',
    text: 'just some text\n',
    errors: ['1:1: a test file is a mapping with tenant, entities, defaults, cases; this file holds the text "just some text"'],
  },
  { name: 'no-cases', text: 'tenant: acme\n', errors: ['1:1: "cases" is missing: the list of cases'] },
  { name: 'empty-cases', text: 'tenant: acme\ncases: []\n', errors: ['2:8: "cases" is empty: a test file needs at least one case'] },
  { name: 'cases-a-mapping', text: 'tenant: acme\ncases:\n  name: c\n', errors: ['3:3: cases must be a list, not a mapping'] },
  {
    name: 'case-a-scalar',
    text: 'tenant: acme\ncases:\n  - just a name\n',
    errors: ['3:5: case 1: a case is a mapping with name, expect and a request; found the text "just a name"'],
  },
  {
    name: 'misspelt-expect',
    text: 'tenant: acme\ncases:\n  - name: c\n    subject: {type: user, id: u}\n    action: read\n    resource: {type: document, id: d}\n    expected: allow\n',
    errors: [
      '3:5: case "c": "expect" is missing: allow or deny',
      '7:5: case "c": unknown key "expected" (did you mean "expect"?); a case has name, expect, rule',
    ],
  },
  {
    name: 'misspelt-tenant',
    text: `tenants: acme\ncases:\n  - ${CASE}\n`,
    errors: ['1:1: unknown key "tenants" (did you mean "tenant"?); a test file has tenant, entities, defaults, cases'],
  },
  {
    name: 'misspelt-default',
    text: `tenant: acme\ndefaults:\n  subjet: {type: user}\ncases:\n  - ${CASE}\n`,
    errors: ['3:3: unknown key "subjet" (did you mean "subject"?); defaults has subject, action, resource, context, input'],
  },
  {
    name: 'misspelt-input-key',
    text: 'tenant: acme\ncases:\n  - name: c\n    input: {principal: {type: user, id: u}, action: read, resource: {type: document, id: d}, contxt: {}}\n    expect: deny\n',
    errors: [
      '4:94: case "c": unknown key "contxt" (did you mean "context"?); input has principal, action, resource, context, actionProperties',
    ],
  },
  {
    name: 'expect-permit',
    text: 'tenant: acme\ncases:\n  - {name: c, expect: permit}\n',
    errors: ['3:23: case "c": expect must be allow or deny, not the text "permit"'],
  },
  {
    name: 'name-a-number',
    text: 'tenant: acme\ncases:\n  - {name: 42, expect: allow}\n',
    errors: ['3:12: case 1: name must be a string, not the number 42'],
  },
  { name: 'name-empty', text: "tenant: acme\ncases:\n  - {name: '', expect: allow}\n", errors: ['3:12: case 1: name must not be empty'] },
  {
    name: 'bundle-empty-list',
    text: 'tenant: acme\ncases:\n  - {name: c, expect: allow, bundle: []}\n',
    errors: ['3:38: case "c": bundle must not be empty'],
  },
  {
    name: 'entities-a-list',
    text: `tenant: acme\nentities: [alice]\ncases:\n  - ${CASE}\n`,
    errors: ['2:11: entities must be a mapping, not a list'],
  },
  {
    name: 'duplicate-names',
    text: `tenant: acme\ncases:\n  - ${CASE}\n  - ${CASE}\n`,
    errors: ['4:12: case "c": the name is used twice in this file (first at line 3)'],
  },
  {
    name: 'no-tenant',
    text: `cases:\n  - ${CASE}\n`,
    errors: ['2:5: case "c": no tenant: set tenant: at the top of the file or in the case'],
  },
  {
    name: 'unknown-tenant',
    text: `tenant: acm\ncases:\n  - ${CASE}\n  - ${CASE.replace('name: c', 'name: d')}\n`,
    errors: ['1:1: tenant "acm" has no Rule, Connector, Bundle or Directory in examples (its tenants: acme, records)'],
  },
  {
    name: 'unknown-rule',
    text: `tenant: acme\ncases:\n  - ${CASE.slice(0, -1)}, rule: team-documnets}\n`,
    errors: ['3:109: case "c": rule "team-documnets" is not a Rule of tenant acme (did you mean "team-documents"?)'],
  },
  {
    name: 'rule-on-deny',
    text: `tenant: acme\ncases:\n  - ${CASE.replace('allow}', 'deny, rule: team-documents}')}\n`,
    errors: ['3:108: case "c": rule: names the rule that allows, and this case expects deny (reason: checks why a request is denied)'],
  },
  {
    name: 'unknown-bundle',
    text: `tenant: acme\ncases:\n  - ${CASE.slice(0, -1)}, bundle: [gateway-all-v1, gateway]}\n`,
    errors: ['3:109: case "c": bundle "gateway" is not a Bundle of tenant acme (its bundles: gateway-all-v1, gateway-documents)'],
  },
  {
    name: 'subject-without-id',
    text: 'tenant: acme\ncases:\n  - {name: c, subject: {type: user}, action: read, resource: {type: document, id: d}, expect: allow}\n',
    errors: ['3:15: case "c": the request is refused as POST /authorization refuses it: subject.id is required'],
  },
  {
    name: 'action-a-number',
    text: 'tenant: acme\ncases:\n  - {name: c, subject: {type: user, id: u}, action: 42, resource: {type: document, id: d}, expect: allow}\n',
    errors: [
      '3:45: case "c": the request is refused as POST /authorization refuses it: action must be a string or an object {name, properties}',
    ],
  },
  {
    name: 'context-a-list',
    text: 'tenant: acme\ncases:\n  - {name: c, subject: {type: user, id: u}, action: read, resource: {type: document, id: d}, context: [a], expect: allow}\n',
    errors: ['3:94: case "c": the request is refused as POST /authorization refuses it: context must be an object'],
  },
  {
    name: 'both-shapes',
    text: 'tenant: acme\ncases:\n  - {name: c, subject: {type: user, id: u}, input: {principal: {type: user}}, expect: allow}\n',
    errors: ['3:45: case "c": a case gives its request as subject, action, resource, context or as input, not both (it has subject)'],
  },
  {
    name: 'input-principal-a-string',
    text: 'tenant: acme\ncases:\n  - {name: c, input: {principal: alice, action: read, resource: {type: document, id: d}}, expect: allow}\n',
    errors: ['3:15: case "c": input is not a decision input: principal must be an object'],
  },
  {
    name: 'unknown-entity',
    text: 'tenant: acme\nentities:\n  alice: {type: user, id: alice}\ncases:\n  - {name: c, subject: alcie, action: read, resource: {type: document, id: d}, expect: allow}\n',
    errors: ['5:15: case "c": subject names the entity "alcie", which entities: does not define (did you mean "alice"?); it defines alice'],
  },
  {
    name: 'no-request',
    text: 'tenant: acme\ncases:\n  - {name: c, expect: allow}\n',
    errors: ['3:5: case "c": no request: give subject, action and resource'],
  },
];

let offline: Offline;
let dir = '';
beforeAll(async () => {
  offline = await offlineOf(join(ROOT, 'examples'));
  dir = await mkdtemp(join(tmpdir(), 'acl-ptest-errors-'));
  await mkdir(join(dir, 'barrage'));
  for (const b of BARRAGE) await writeFile(join(dir, 'barrage', `${b.name}.test.yaml`), b.text);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('malformed test files', () => {
  for (const b of BARRAGE) {
    it(`${b.name}: ${b.errors[0]?.replace(/^\d+:\d+: /, '')}`, async () => {
      const outcome = await runText(offline, b.text, `${b.name}.test.yaml`);
      expect(outcome.ok).toBe(false);
      const errors = !outcome.ok && 'errors' in outcome ? outcome.errors : [];
      expect(errors.map((e) => `${e.line}:${e.column}: ${e.message}`)).toEqual(b.errors.map((e) => expect.stringContaining(e)));
      expect(errors.every((e) => e.file === `${b.name}.test.yaml`)).toBe(true);
    });
  }

  it('are all reported through the CLI at once, file:line:column, with exit status 2 and no stack trace', () => {
    const r = cli(['test', '--manifests', 'examples', '--tests', join(dir, 'barrage')]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(stackLines(r.stderr)).toEqual([]);
    for (const b of BARRAGE) {
      for (const e of b.errors) expect(r.stderr).toContain(`${join(dir, 'barrage', `${b.name}.test.yaml`)}:${e}`);
    }
    const total = BARRAGE.reduce((n, b) => n + b.errors.length, 0);
    expect(r.stderr).toContain(`${total} error(s) in the test files: no case was decided`);
  });
});
