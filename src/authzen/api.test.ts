// The AuthZEN protocol functions without a socket: the limits a caller cannot reach cheaply over HTTP.
import { describe, expect, it } from 'vitest';
import { ruleModelFor } from '../../test/support/rules.ts';
import { buildDirectory, buildIndex, compileRule } from '../policy/index.ts';
import { evaluations, MAX_SCAN, search, withDefaults, type TenantView } from './api.ts';

const rule = ruleModelFor('staff-read', {
  subjectType: 'user',
  actions: ['read'],
  resourceType: 'record',
  condition: 'principal.staff == true',
});

function view(users: number, staffFrom: number): TenantView {
  const entities = Array.from({ length: users }, (_, i) => ({
    type: 'user',
    id: `u${String(i).padStart(6, '0')}`,
    properties: { staff: i >= staffFrom },
  }));
  return { tenant: 'acme', index: buildIndex('acme', [compileRule(rule)]), directory: buildDirectory(entities) };
}

const query = { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'record', id: 'r1' } };

type Page = { page: { next_token: string }; results: { id: string }[] };
function page(v: TenantView, token?: string): Page {
  const reply = search('subject', token === undefined ? query : { ...query, page: { token } }, v);
  if (!reply.ok) throw new Error(reply.message);
  return reply.body as Page;
}

describe('search', () => {
  it(`ends a page after ${MAX_SCAN} candidates, with fewer results than its limit and a token that goes on`, () => {
    const v = view(MAX_SCAN + 50, MAX_SCAN + 40);
    const first = page(v);
    expect(first.results).toEqual([]);
    expect(first.page.next_token).not.toBe('');
    const second = page(v, first.page.next_token);
    expect(second.results.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => `u${String(MAX_SCAN + 40 + i).padStart(6, '0')}`));
    expect(second.page.next_token).toBe('');
  });

  it('checks every candidate up to the limit in one page when they fit', () => {
    const v = view(MAX_SCAN, MAX_SCAN - 3);
    expect(page(v)).toEqual({
      page: { next_token: '' },
      results: [
        { type: 'user', id: `u${String(MAX_SCAN - 3).padStart(6, '0')}` },
        { type: 'user', id: `u${String(MAX_SCAN - 2).padStart(6, '0')}` },
        { type: 'user', id: `u${String(MAX_SCAN - 1).padStart(6, '0')}` },
      ],
    });
  });
});

describe('batch defaults', () => {
  it("fills a missing id from the default only when the item names the default's type", () => {
    const defaults = { resource: { type: 'record', id: 'r1', properties: { status: 'archived' } } };
    expect(withDefaults(defaults, { resource: { properties: { status: 'active' } } })).toEqual({
      resource: { type: 'record', id: 'r1', properties: { status: 'active' } },
    });
    expect(withDefaults(defaults, { resource: { type: 'record' } })).toEqual({ resource: { type: 'record', id: 'r1' } });
    expect(withDefaults(defaults, { resource: { type: 'document' } })).toEqual({ resource: { type: 'document' } });
    const v = view(1, 0);
    expect(
      evaluations(
        {
          subject: { type: 'user', id: 'u000000' },
          action: { name: 'read' },
          ...defaults,
          evaluations: [{ resource: { type: 'document' } }],
        },
        v,
        () => 'now',
      ),
    ).toEqual({
      ok: true,
      body: { evaluations: [{ decision: false, context: { error: { status: 400, message: 'evaluations[0].resource.id is required' } } }] },
    });
  });
});
