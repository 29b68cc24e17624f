import { describe, expect, it } from 'vitest';
import {
  buildDirectory,
  buildIndex,
  compileRule,
  decide,
  EMPTY_DIRECTORY,
  type CompiledRule,
  type DecisionInput,
  type EntityDirectory,
  type RuleIndex,
} from './index.ts';
import { shadowDecide, type ShadowSet, type ShadowVisit } from './shadow.ts';
import { testRule } from './evaluate.ts';
import { withDirectory } from './directory.ts';
import { rng } from '../../test/support/corpus.ts';
import { decisionInput, ruleModelFor } from '../../test/support/rules.ts';

const input = decisionInput;

function visits(live: RuleIndex, shadow: ShadowSet, request: DecisionInput, directory: EntityDirectory = EMPTY_DIRECTORY): string[] {
  const out: string[] = [];
  const decision = decide(live, request, directory);
  shadowDecide(live, shadow, request, directory, decision, (v: ShadowVisit) => {
    out.push(`${v.role} ${v.rule.model.name} matched=${v.matched} flipped=${v.flipped}`);
  });
  return out.sort();
}

const blue = input({ principal: { type: 'user', id: 'u1', team: 'blue' }, action: 'read', resource: { type: 'document', id: 'd1' } });
const red = input({ principal: { type: 'user', id: 'u2', team: 'red' }, action: 'read', resource: { type: 'document', id: 'd1' } });

describe('shadowDecide', () => {
  it('says a Proposed rule would allow what is denied today, and not what is already allowed', () => {
    const live = buildIndex('acme', [compileRule(ruleModelFor('blue-reads', { condition: 'principal.team == "blue"' }))]);
    const proposed = buildIndex('acme', [compileRule(ruleModelFor('everyone-reads', { state: 'Proposed' }))]);
    const shadow = { proposed, removals: new Set<string>() };
    expect(visits(live, shadow, red)).toEqual(['Proposed everyone-reads matched=true flipped=true']);
    expect(visits(live, shadow, blue)).toEqual(['Proposed everyone-reads matched=true flipped=false']);
  });

  it('visits no rule of the proposal for a request whose types or action it does not cover', () => {
    const live = buildIndex('acme', []);
    const proposed = buildIndex('acme', [compileRule(ruleModelFor('writers', { state: 'Proposed', actions: ['write'] }))]);
    expect(visits(live, { proposed, removals: new Set() }, red)).toEqual([]);
  });

  it('says a rule marked for removal would deny what only it allows, and not what another rule still allows', () => {
    const live = buildIndex('acme', [
      compileRule(ruleModelFor('a-blue', { condition: 'principal.team == "blue"' })),
      compileRule(ruleModelFor('b-everyone')),
    ]);
    const onlyEveryone = { proposed: buildIndex('acme', []), removals: new Set(['b-everyone']) };
    expect(visits(live, onlyEveryone, red)).toEqual(['Removal b-everyone matched=true flipped=true']);
    // Blue is allowed by a-blue (first by name), which stays: nothing flips, though b-everyone matched.
    expect(visits(live, onlyEveryone, blue)).toEqual(['Removal b-everyone matched=true flipped=false']);
    const onlyBlue = { proposed: buildIndex('acme', []), removals: new Set(['a-blue']) };
    // a-blue allowed blue, but b-everyone still would.
    expect(visits(live, onlyBlue, blue)).toEqual(['Removal a-blue matched=true flipped=false']);
    expect(visits(live, onlyBlue, red)).toEqual(['Removal a-blue matched=false flipped=false']);
  });

  it('counts a removal as no flip when a Proposed rule would allow in its place', () => {
    const live = buildIndex('acme', [compileRule(ruleModelFor('old'))]);
    const proposed = buildIndex('acme', [compileRule(ruleModelFor('new', { state: 'Proposed', condition: 'principal.team == "blue"' }))]);
    const shadow = { proposed, removals: new Set(['old']) };
    expect(visits(live, shadow, blue)).toEqual(['Proposed new matched=true flipped=false', 'Removal old matched=true flipped=false']);
    expect(visits(live, shadow, red)).toEqual(['Proposed new matched=false flipped=false', 'Removal old matched=true flipped=true']);
  });

  it('reads directory properties under the request, as decide does', () => {
    const directory = buildDirectory([{ type: 'user', id: 'u2', properties: { team: 'blue' } }]);
    const live = buildIndex('acme', []);
    const proposed = buildIndex('acme', [compileRule(ruleModelFor('blue', { state: 'Proposed', condition: 'principal.team == "blue"' }))]);
    const anon = input({ principal: { type: 'user', id: 'u2' }, action: 'read', resource: { type: 'document', id: 'd1' } });
    expect(visits(live, { proposed, removals: new Set() }, anon, directory)).toEqual(['Proposed blue matched=true flipped=true']);
  });
});

// A brute-force model: decide with (Enforced − removals) ∪ Proposed, and compare.
describe('shadowDecide against deciding with the proposal in force', () => {
  const TEAMS = ['blue', 'red', 'green'];
  const ACTIONS = ['read', 'write'];
  const TYPES = ['document', 'folder'];

  function randomRule(next: () => number, name: string, state: 'Enforced' | 'Proposed'): CompiledRule {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
    const conditions = [
      undefined,
      `principal.team == "${pick(TEAMS)}"`,
      `resource.team == "${pick(TEAMS)}"`,
      'principal.team == resource.team',
      `principal.level > ${Math.floor(next() * 4)}`,
      'principal.missing == "x"',
    ];
    const actions = ACTIONS.filter(() => next() < 0.6);
    return compileRule(
      ruleModelFor(name, {
        state,
        actions: actions.length > 0 ? actions : ['read'],
        resourceType: pick(TYPES),
        ...(pick(conditions) === undefined ? {} : { condition: pick(conditions.slice(1)) as string }),
      }),
    );
  }

  it('agrees with the brute-force model on 300 random tenants and 40 requests each', () => {
    const next = rng(28);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
    let flipsSeen = 0;
    for (let tenant = 0; tenant < 300; tenant++) {
      const names = Array.from(
        { length: 1 + Math.floor(next() * 8) },
        (_, i) => `r${String(Math.floor(next() * 100)).padStart(2, '0')}-${i}`,
      );
      const enforced = names.filter(() => next() < 0.6).map((n) => randomRule(next, n, 'Enforced'));
      const proposedRules = names.filter((n) => !enforced.some((r) => r.model.name === n)).map((n) => randomRule(next, n, 'Proposed'));
      const removals = new Set(enforced.filter(() => next() < 0.4).map((r) => r.model.name));
      const live = buildIndex('acme', enforced);
      const shadow: ShadowSet = { proposed: buildIndex('acme', proposedRules), removals };
      const inForce = buildIndex('acme', [...enforced.filter((r) => !removals.has(r.model.name)), ...proposedRules]);
      for (let n = 0; n < 40; n++) {
        const request = input({
          principal: { type: 'user', id: 'u', team: pick(TEAMS), ...(next() < 0.7 ? { level: Math.floor(next() * 5) } : {}) },
          action: pick(ACTIONS),
          resource: { type: pick(TYPES), id: 'r', team: pick(TEAMS) },
        });
        const before = decide(live, request);
        const after = decide(inForce, request);
        const seen = new Map<string, ShadowVisit>();
        shadowDecide(live, shadow, request, EMPTY_DIRECTORY, before, (v) => seen.set(v.rule.model.name, v));
        // Which rules of the proposal cover the request, and what each says, from first principles.
        const merged = withDirectory(request, EMPTY_DIRECTORY);
        const covers = (r: CompiledRule): boolean =>
          r.model.resourceType === request.resource['type'] && r.model.actions.includes(request.action);
        const expected = new Map<string, string>();
        for (const r of proposedRules.filter(covers)) {
          const matched = testRule(r, merged);
          expected.set(r.model.name, `Proposed ${matched} ${matched && !before.allow}`);
        }
        for (const r of enforced.filter((x) => covers(x) && removals.has(x.model.name))) {
          const matched = testRule(r, merged);
          expected.set(r.model.name, `Removal ${matched} ${matched && before.allow && !after.allow}`);
        }
        const got = new Map([...seen].map(([k, v]) => [k, `${v.role} ${v.matched} ${v.flipped}`]));
        expect(got).toEqual(expected);
        // Some rule of the proposal flips exactly when the decision with it in force differs.
        expect([...seen.values()].some((v) => v.flipped)).toBe(before.allow !== after.allow);
        if (before.allow !== after.allow) flipsSeen++;
      }
    }
    // The generator makes both directions often enough to mean something.
    expect(flipsSeen).toBeGreaterThan(300);
  });
});
