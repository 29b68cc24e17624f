// Running cases in-process against examples/: how a request is built (defaults, named entities, both
// shapes, action properties), how a case passes or fails (decision, rule, reason), and what the
// failure says. The CLI is exercised in cli.test.ts.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { merge } from '../../src/policytest/cases.ts';
import { bundlesFor } from '../../src/policytest/by-opa.ts';
import type { TestReport } from '../../src/policytest/report.ts';
import type { CaseResult } from '../../src/policytest/run.ts';
import { worldOf } from '../../src/policytest/world.ts';
import type { Offline } from '../../src/pipeline/index.ts';
import { offlineOf, ROOT, runText } from './support.ts';

let offline: Offline;
beforeAll(async () => {
  offline = await offlineOf(join(ROOT, 'examples'));
});

async function report(text: string): Promise<TestReport> {
  const outcome = await runText(offline, text);
  if (!outcome.ok) throw new Error(JSON.stringify(outcome));
  return outcome.report;
}

async function only(text: string): Promise<CaseResult> {
  const [r] = (await report(text)).results;
  if (!r) throw new Error('no case');
  return r;
}

describe('building the request', () => {
  it('merges defaults under a case: mappings key by key, the case winning, lists replaced', () => {
    expect(merge({ type: 'user', properties: { team: 'blue', roles: ['a', 'b'] } }, { id: 'u', properties: { roles: ['c'] } })).toEqual({
      type: 'user',
      id: 'u',
      properties: { team: 'blue', roles: ['c'] },
    });
    expect(merge('read', { name: 'delete', properties: { soft: true } })).toEqual({ name: 'delete', properties: { soft: true } });
    expect(merge({ name: 'read' }, 'write')).toBe('write');
    expect(merge({ a: 1 }, undefined)).toEqual({ a: 1 });
    expect(Object.getPrototypeOf(merge({}, JSON.parse('{"__proto__": {"polluted": true}}')))).toBe(Object.prototype);
  });

  it('maps a case in the service shape exactly as POST /authorization maps a body', async () => {
    const r = await only(`
tenant: records
defaults:
  subject: {type: user, properties: {groups: [staff], role: member}}
  action: read
  resource: {type: record}
cases:
  - name: c
    subject: {id: carol, properties: {groups: [contractors]}, email: carol@example.com}
    action: {name: delete, properties: {soft: true}, reason: tidy}
    resource: {id: record-3}
    context: {ip: 10.0.0.1}
    expect: allow
`);
    expect(r.case.input).toEqual({
      principal: { type: 'user', id: 'carol', groups: ['contractors'], role: 'member', email: 'carol@example.com' },
      action: 'delete',
      resource: { type: 'record', id: 'record-3' },
      context: { ip: '10.0.0.1' },
      actionProperties: { soft: true, reason: 'tidy' },
    });
    expect(r.native).toMatchObject({ decision: 'allow', rule: 'owners-soft-delete-records' });
  });

  it('puts in named entities, under the case and over the defaults', async () => {
    const r = await only(`
tenant: acme
entities:
  member: {type: user, id: u1, properties: {team: blue}}
defaults:
  subject: member
  resource: {type: document, id: d, properties: {team: red}}
cases:
  - {name: c, subject: {properties: {team: red}}, action: read, expect: allow, rule: team-documents}
`);
    expect(r.case.input.principal).toEqual({ type: 'user', id: 'u1', team: 'red' });
    expect(r.failures).toEqual([]);
  });

  it('takes a case in OPA input shape as OPA is queried, with defaults.input under it', async () => {
    const r = await only(`
tenant: records
defaults:
  input: {principal: {type: user}, resource: {type: record, id: record-1}}
cases:
  - {name: c, input: {principal: {id: alice}, action: delete, actionProperties: {soft: true}}, expect: allow, rule: owners-soft-delete-records}
`);
    expect(r.case.input).toEqual({
      principal: { type: 'user', id: 'alice' },
      action: 'delete',
      resource: { type: 'record', id: 'record-1' },
      context: {},
      actionProperties: { soft: true },
    });
    expect(r.failures).toEqual([]);
  });

  it('gives a case without request keys the defaults of the shape they are in', async () => {
    const r = await report(`
tenant: acme
defaults:
  input: {principal: {type: user, id: u, roles: [admin]}, action: share, resource: {type: document, id: d}}
cases:
  - {name: all from the defaults, expect: allow, rule: admins-manage-documents}
`);
    expect(r.results.map((x) => x.failures)).toEqual([[]]);
  });
});

describe('deciding a case', () => {
  const ADMIN_OF_BLUE =
    'subject: {type: user, id: u, properties: {team: blue, roles: [admin]}}, action: read, resource: {type: document, id: d, properties: {team: blue}}';

  it('passes when the decision, the deciding rule and a reason fragment are as expected', async () => {
    const r = await only(
      `tenant: acme\ncases:\n  - {name: c, ${ADMIN_OF_BLUE}, expect: allow, rule: admins-manage-documents, reason: Admins may do anything}\n`,
    );
    expect(r.failures).toEqual([]);
    expect(r.native.reasons).toEqual(['Rule acme/admins-manage-documents allowed the request: Admins may do anything with documents.']);
  });

  it('fails on another decision, and says what each candidate rule missed', async () => {
    const r = await only(
      'tenant: acme\ncases:\n  - {name: c, subject: {type: user, id: u, properties: {team: red}}, action: read, resource: {type: document, id: d, properties: {team: blue}}, expect: allow}\n',
    );
    expect(r.failures).toEqual([{ kind: 'expectation', message: 'expected allow, got deny' }]);
    expect(r.native.reasons).toEqual([
      'Rule acme/admins-manage-documents did not match: its condition "admin" in principal.roles could not be evaluated (principal.roles is missing)',
      'Rule acme/team-documents did not match: its condition principal.team == resource.team is false',
    ]);
  });

  it('fails when another rule decides, and says that rules are tried by name', async () => {
    const r = await only(`tenant: acme\ncases:\n  - {name: c, ${ADMIN_OF_BLUE}, expect: allow, rule: team-documents}\n`);
    expect(r.failures).toEqual([
      {
        kind: 'expectation',
        message:
          'expected rule team-documents to allow, but rule admins-manage-documents did (rule team-documents matches too, but the first matching rule by name decides)',
      },
    ]);
  });

  it('fails a case expecting a rule that is not Enforced, and says so', async () => {
    const r = await only(
      'tenant: acme\ncases:\n  - {name: c, subject: {type: contractor, id: c}, action: comment, resource: {type: document, id: d}, expect: allow, rule: contractors-comment}\n',
    );
    expect(r.failures).toEqual([
      { kind: 'expectation', message: 'expected allow, got deny (rule contractors-comment is Proposed: only an Enforced rule decides)' },
    ]);
  });

  it('fails when no reason holds the fragment', async () => {
    const r = await only(`tenant: acme\ncases:\n  - {name: c, ${ADMIN_OF_BLUE}, expect: allow, reason: owners may}\n`);
    expect(r.failures).toEqual([{ kind: 'expectation', message: 'expected a reason containing "owners may"; none does' }]);
  });

  it('decides with the tenant directory, as the service does', async () => {
    const r = await only(
      'tenant: records\ncases:\n  - {name: c, subject: {type: user, id: bob}, action: write, resource: {type: record, id: record-2}, expect: allow}\n',
    );
    expect(r.native.rule).toBe('admins-write-archived-records');
  });

  it('takes a case tenant over the file tenant', async () => {
    const r = await only(
      'tenant: acme\ncases:\n  - {name: c, tenant: records, subject: {type: user, id: alice}, action: read, resource: {type: record, id: r}, expect: allow}\n',
    );
    expect(r.case.tenant).toBe('records');
    expect(r.failures).toEqual([]);
  });
});

describe('the bundles OPA decides a case on', () => {
  it('are the bundles of the tenant whose entityTypes admit the case, or those the case names', async () => {
    const world = worldOf(offline);
    const acme = world.get('acme');
    const records = world.get('records');
    if (!acme || !records) throw new Error('examples lost a tenant');
    const { results } = await report(`
cases:
  - {name: document, tenant: acme, subject: {type: user, id: u}, action: read, resource: {type: document, id: d}, expect: deny}
  - {name: report, tenant: acme, subject: {type: user, id: u}, action: read, resource: {type: report, id: r}, expect: deny}
  - {name: named, tenant: acme, subject: {type: user, id: u}, action: read, resource: {type: report, id: r}, expect: deny, bundle: gateway-documents}
  - {name: records, tenant: records, subject: {type: user, id: u}, action: read, resource: {type: record, id: r}, expect: deny}
`);
    const names = results.map((r) => bundlesFor(r.case, r.case.tenant === 'acme' ? acme : records).map((b) => `${b.tenant}/${b.name}`));
    expect(names).toEqual([
      ['acme/gateway-all-v1', 'acme/gateway-documents'],
      ['acme/gateway-all-v1'],
      ['acme/gateway-documents'],
      ['records/records'],
    ]);
  });
});
