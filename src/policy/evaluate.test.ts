import { describe, expect, it } from 'vitest';
import { buildIndex, compileRule, decide, matchingRules, toDecisionInput, updateIndex } from './index.ts';
import { rng } from '../../test/support/corpus.ts';
import { decisionInput, ruleModelFor } from '../../test/support/rules.ts';

const input = decisionInput;

const rules = [
  ruleModelFor('team-documents', {
    actions: ['read', 'write'],
    condition: 'principal.team == resource.team',
    description: 'Members of a team may read and edit their team documents.',
  }),
  ruleModelFor('admins', { actions: ['read', 'write', 'delete'], condition: '"admin" in principal.roles' }),
  ruleModelFor('services-read', { subjectType: 'service_account' }),
].map(compileRule);
const index = buildIndex('acme', rules);

describe('decide', () => {
  it('allows through the first matching rule by name and names it as the policy', () => {
    const d = decide(
      index,
      input({
        principal: { type: 'user', id: 'alice', team: 'blue', roles: ['admin'] },
        action: 'read',
        resource: { type: 'document', id: 'd1', team: 'blue' },
      }),
    );
    expect({ ...d, rule: d.rule?.id }).toEqual({
      allow: true,
      policyId: 'acme/admins',
      reasons: ['Rule acme/admins allowed the request'],
      rule: 'acme/admins',
    });
  });

  it('carries the rule description in the reason', () => {
    const d = decide(
      index,
      input({
        principal: { type: 'user', id: 'bob', team: 'blue' },
        action: 'write',
        resource: { type: 'document', id: 'd1', team: 'blue' },
      }),
    );
    expect(d.policyId).toBe('acme/team-documents');
    expect(d.reasons).toEqual(['Rule acme/team-documents allowed the request: Members of a team may read and edit their team documents.']);
  });

  it('denies with the tenant as policy set and says why each candidate did not match', () => {
    const d = decide(
      index,
      input({ principal: { type: 'user', id: 'bob', roles: [] }, action: 'read', resource: { type: 'document', id: 'd1', team: 'blue' } }),
    );
    expect(d.allow).toBe(false);
    expect(d.policyId).toBe('acme');
    expect(d.reasons).toEqual([
      'Rule acme/admins did not match: its condition "admin" in principal.roles is false',
      'Rule acme/team-documents did not match: its condition principal.team == resource.team could not be evaluated (principal.team is missing)',
    ]);
  });

  it('says when no rule covers the subject type, action and resource type', () => {
    const d = decide(index, input({ principal: { type: 'robot', id: 'r' }, action: 'read', resource: { type: 'document', id: 'd1' } }));
    expect(d.reasons).toEqual(['No Enforced rule in acme lets a robot "read" a document']);
  });

  it('matches types and actions exactly', () => {
    for (const [type, action] of [
      ['User', 'read'],
      ['user', 'Read'],
      ['user', 'read '],
    ]) {
      expect(
        decide(index, input({ principal: { type, id: 'a', roles: ['admin'] }, action, resource: { type: 'document', id: 'd' } })).allow,
      ).toBe(false);
    }
  });

  it('allows a rule without a condition on types and action alone', () => {
    expect(
      decide(index, input({ principal: { type: 'service_account', id: 's' }, action: 'read', resource: { type: 'document', id: 'd' } }))
        .allow,
    ).toBe(true);
  });
});

describe('index', () => {
  it('only offers the rules for the subject type, action and resource type, sorted by name', () => {
    expect(index.candidates('user', 'read', 'document').map((r) => r.model.name)).toEqual(['admins', 'team-documents']);
    expect(index.candidates('user', 'delete', 'document').map((r) => r.model.name)).toEqual(['admins']);
    expect(index.candidates('user', 'approve', 'document')).toEqual([]);
    expect(index.size).toBe(3);
  });

  it('lets rules with the same constants share one array, and still decides each by its own types', () => {
    const a = compileRule(ruleModelFor('a', { condition: 'principal.team == "x"' }));
    const b = compileRule(ruleModelFor('b', { actions: ['write'], condition: 'principal.team == "x"' }));
    const c = compileRule(ruleModelFor('c', { actions: ['delete'], condition: 'principal.team == "y"' }));
    const i = buildIndex('acme', [a, b, c]);
    const [ra] = i.candidates('user', 'read', 'document');
    const [rb] = i.candidates('user', 'write', 'document');
    const [rc] = i.candidates('user', 'delete', 'document');
    expect(ra?.constants).toBe(rb?.constants);
    expect(rc?.constants).not.toBe(ra?.constants);
    const doc = (action: string, team: string) =>
      input({ principal: { type: 'user', id: 'u', team }, action, resource: { type: 'document', id: 'd' } });
    expect([decide(i, doc('write', 'x')).policyId, decide(i, doc('delete', 'y')).policyId, decide(i, doc('delete', 'x')).allow]).toEqual([
      'acme/b',
      'acme/c',
      false,
    ]);
  });

  it('reports every matching rule', () => {
    const i = input({
      principal: { type: 'user', id: 'a', team: 't', roles: { admin: true } },
      action: 'write',
      resource: { type: 'document', id: 'd', team: 't' },
    });
    expect(matchingRules(index, i)).toEqual(['admins', 'team-documents']);
  });
});

describe('toDecisionInput', () => {
  it.each([
    [[], 'input must be an object'],
    [{ principal: 'alice', action: 'read', resource: {} }, 'principal must be an object'],
    [{ principal: {}, action: 1, resource: {} }, 'action must be a string'],
    [{ principal: {}, action: 'read' }, 'resource must be an object'],
    [{ principal: {}, action: 'read', resource: {}, context: [] }, 'context must be an object'],
  ])('rejects %j', (doc, message) => {
    expect(toDecisionInput(doc)).toBe(message);
  });

  it('returns a clean document as it is, and copies one with lone surrogates', () => {
    const clean = { principal: { type: 'user' }, action: 'read', resource: { type: 'doc' }, context: {} };
    const got = toDecisionInput(clean);
    expect(typeof got === 'string' ? got : got.principal).toBe(clean.principal);
    const dirty = { principal: { type: 'user', ['k\ud800']: 'v\udc00' }, action: 'read', resource: { type: 'doc' }, context: {} };
    expect(toDecisionInput(dirty)).toEqual({ ...dirty, principal: { type: 'user', 'k\uFFFD': 'v\uFFFD' }, actionProperties: {} });
  });

  it('refuses documents nested deeper than 256 levels, and non-JSON values', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(toDecisionInput({ principal: { deep }, action: 'read', resource: {} })).toBe(
      'input is not a JSON document: nesting deeper than 256 levels',
    );
    expect(toDecisionInput({ principal: { n: Number.NaN }, action: 'read', resource: {} })).toBe(
      'input is not a JSON document: numbers must be finite',
    );
    expect(toDecisionInput({ principal: { f: () => 1 }, action: 'read', resource: {} })).toBe(
      'input is not a JSON document: not a JSON value: function',
    );
  });

  it('fills in an empty context and empty action properties', () => {
    expect(toDecisionInput({ principal: {}, action: 'read', resource: {} })).toEqual({
      principal: {},
      action: 'read',
      resource: {},
      context: {},
      actionProperties: {},
    });
    expect(toDecisionInput({ principal: {}, action: 'read', resource: {}, actionProperties: [] })).toBe(
      'actionProperties must be an object',
    );
  });
});

// Three types of each: a dense table. Two hundred of each, which 60 rules leave mostly empty: a Map of the
// keys in use (a dense table cost 4.2 KiB per rule in tenants of 100 rules over many types).
describe.each([
  ['a dense table', ['user', 'service', 'group'], ['document', 'folder', 'report']],
  ['a sparse table', Array.from({ length: 200 }, (_, i) => `subject${i}`), Array.from({ length: 200 }, (_, i) => `resource${i}`)],
])('updateIndex, %s', (_, SUBJECTS, RESOURCES) => {
  const ACTIONS = ['read', 'write', 'delete', 'list'];
  const next01 = rng(7);
  const rand = (n: number): number => Math.floor(next01() * n);
  // An update keeps the index's type numbers, so edits pick among the types the first rules use.
  const subjectsUsed = new Set<string>();
  const resourcesUsed = new Set<string>();
  const pick = (all: readonly string[], used: Set<string>, first: boolean): string => {
    const from = first ? all : [...used];
    const t = from[rand(from.length)] as string;
    used.add(t);
    return t;
  };
  const make = (name: string, variant: number, first = false) =>
    compileRule(
      ruleModelFor(name, {
        subjectType: pick(SUBJECTS, subjectsUsed, first),
        resourceType: pick(RESOURCES, resourcesUsed, first),
        actions: [...new Set([ACTIONS[rand(4)] as string, ACTIONS[rand(4)] as string])],
        condition: variant % 3 === 0 ? 'principal.team == resource.team' : `principal.level >= ${variant % 5}`,
      }),
    );
  const view = (i: ReturnType<typeof buildIndex>): unknown => ({
    size: i.size,
    rules: i.rules.map((r) => r.model.name),
    slots: SUBJECTS.flatMap((s) =>
      ACTIONS.flatMap((a) => RESOURCES.map((r) => i.candidates(s, a, r).map((c) => `${c.model.name}:${JSON.stringify(c.constants)}`))),
    ),
  });

  it('gives the index a whole build gives, for rules replaced, added and removed', () => {
    let rules = new Map(
      Array.from({ length: 60 }, (_, i) => [`r${String(i).padStart(2, '0')}`, make(`r${String(i).padStart(2, '0')}`, i, true)]),
    );
    let index = buildIndex('acme', [...rules.values()]);
    for (let round = 0; round < 40; round++) {
      const changed = new Set<string>();
      for (let k = 0; k < 1 + rand(4); k++) {
        const name = `r${String(rand(70)).padStart(2, '0')}`;
        changed.add(name);
        if (rand(4) === 0) rules.delete(name);
        else rules.set(name, make(name, round + k));
      }
      rules = new Map([...rules].sort(([a], [b]) => (a < b ? -1 : 1)));
      const next = updateIndex(
        index,
        changed,
        [...changed].map((n) => rules.get(n)).filter((r) => r !== undefined),
      );
      expect(next).toBeDefined();
      expect(view(next as typeof index)).toEqual(view(buildIndex('acme', [...rules.values()])));
      // And both are what the rules say, read without any index.
      const held = [...rules.values()];
      expect((view(next as typeof index) as { slots: unknown }).slots).toEqual(
        SUBJECTS.flatMap((s) =>
          ACTIONS.flatMap((a) =>
            RESOURCES.map((r) =>
              held
                .filter((c) => c.model.subjectType === s && c.model.resourceType === r && c.model.actions.includes(a))
                .map((c) => `${c.model.name}:${JSON.stringify(c.constants)}`),
            ),
          ),
        ),
      );
      index = next as typeof index;
    }
  });

  it('asks for a whole build when a rule names a type the index has no number for', () => {
    const index = buildIndex('acme', [compileRule(ruleModelFor('a', {}))]);
    expect(updateIndex(index, new Set(['b']), [compileRule(ruleModelFor('b', { subjectType: 'robot' }))])).toBeUndefined();
  });
});
