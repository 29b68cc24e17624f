// Re-deciding recorded decisions against a candidate folder: a service line by the tenant's whole
// index and directory, an OPA line by only the rules its bundle carries, and a tenant or bundle the
// candidate lacks as a cause.
import { beforeAll, describe, expect, it } from 'vitest';
import type { World } from '../../src/policytest/index.ts';
import { createReplayer } from '../../src/replay/replay.ts';
import { candidateWorld, recorded } from './world.ts';

let world: World;
beforeAll(async () => {
  world = await candidateWorld();
});

const red = { type: 'user', id: 'u-red', team: 'red' };
const redDoc = { type: 'document', id: 'd-red', team: 'red' };
const blueDoc = { type: 'document', id: 'd-blue', team: 'blue' };
const report = { type: 'report', id: 'r-1' };

describe('createReplayer', () => {
  it('decides a service line with the tenant’s index and names the allowing rule', () => {
    const r = createReplayer(world)(
      recorded({ decision: 'allow', rule: 'team-documents', principal: red, action: 'read', resource: redDoc }),
    );
    expect(r).toMatchObject({ decision: 'allow', rule: 'team-documents', change: 'unchanged' });
  });

  it('reports an allow the candidate denies as allow → deny, with no rule after', () => {
    const r = createReplayer(world)(
      recorded({ decision: 'allow', rule: 'team-documents', principal: red, action: 'read', resource: blueDoc }),
    );
    expect(r).toMatchObject({ decision: 'deny', change: 'allow-to-deny' });
    expect(r).not.toHaveProperty('rule');
  });

  it('merges the directory into the input, as serve does', () => {
    const r = createReplayer(world)(
      recorded({ decision: 'deny', principal: { type: 'user', id: 'dana' }, action: 'read', resource: report }),
    );
    expect(r).toMatchObject({ decision: 'allow', rule: 'finance-reports', change: 'deny-to-allow' });
  });

  it('decides an OPA line with only the rules its bundle carries', () => {
    const replay = createReplayer(world);
    const finance = { type: 'user', id: 'u-f', team: 'finance' };
    // The documents bundle carries no report rule: its OPA denies, as the tenant's index would not.
    const onDocuments = replay(
      recorded({ source: 'opa', bundle: 'documents', decision: 'deny', principal: finance, action: 'read', resource: report }),
    );
    expect(onDocuments).toMatchObject({ decision: 'deny', change: 'unchanged' });
    const onAll = replay(
      recorded({ source: 'opa', bundle: 'all', decision: 'deny', principal: finance, action: 'read', resource: report }),
    );
    expect(onAll).toMatchObject({ decision: 'allow', rule: 'finance-reports', change: 'deny-to-allow' });
    const service = replay(recorded({ decision: 'deny', principal: finance, action: 'read', resource: report }));
    expect(service).toMatchObject({ decision: 'allow', change: 'deny-to-allow' });
  });

  it('counts a tenant or a bundle the candidate lacks as a cause, naming it', () => {
    const replay = createReplayer(world);
    const tenant = replay(
      recorded({ where: 'a.log:7', tenant: 'gone', decision: 'allow', principal: red, action: 'read', resource: redDoc }),
    );
    expect(tenant).toEqual({ ok: false, cause: 'unknown-tenant', where: 'a.log:7', detail: 'the candidate has no tenant "gone"' });
    const bundle = replay(
      recorded({ where: 'a.log:8', source: 'opa', bundle: 'old', decision: 'allow', principal: red, action: 'read', resource: redDoc }),
    );
    expect(bundle).toEqual({
      ok: false,
      cause: 'unknown-bundle',
      where: 'a.log:8',
      detail: 'the candidate\'s tenant "acme" has no bundle "old"',
    });
  });

  it('knows which rules each bundle carries', () => {
    const acme = world.get('acme');
    expect(acme?.bundles.get('documents')?.rules).toEqual(['admins', 'team-documents']);
    expect(acme?.bundles.get('all')?.rules).toEqual(['admins', 'finance-reports', 'team-documents']);
  });
});
