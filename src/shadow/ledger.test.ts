import { describe, expect, it } from 'vitest';
import { buildIndex, compileRule, decide, EMPTY_DIRECTORY, type CompiledRule, type DecisionInput } from '../policy/index.ts';
import { decisionInput, ruleModelFor } from '../../test/support/rules.ts';
import { createShadowLedger, exampleText, MAX_EXAMPLE_CHARS } from './ledger.ts';

const input = decisionInput;

const request = (team: string, extra: object = {}) =>
  input({ principal: { type: 'user', id: 'u', team, ...extra }, action: 'read', resource: { type: 'document', id: 'd' } });

function setup(condition = 'principal.team == "red"') {
  let ms = 1_000;
  const ledger = createShadowLedger({ replica: 'pod-a', now: () => ms });
  const live = buildIndex('acme', [compileRule(ruleModelFor('blue', { condition: 'principal.team == "blue"' }))]);
  const proposedRule = (c: string): CompiledRule => compileRule(ruleModelFor('red', { state: 'Proposed', condition: c }));
  let shadow = { proposed: buildIndex('acme', [proposedRule(condition)]), removals: new Set<string>() };
  const send = (r: DecisionInput) => {
    ms += 1;
    ledger.observe('acme', shadow, live, r, EMPTY_DIRECTORY, decide(live, r));
  };
  const edit = (c: string) => {
    shadow = { proposed: buildIndex('acme', [proposedRule(c)]), removals: new Set() };
    ledger.follow('acme', { index: live, shadow });
  };
  return { ledger, send, edit, live, shadow: () => shadow };
}

describe('the shadow ledger', () => {
  it('counts every decision sent: evaluated, matched, flips, times and the first examples', () => {
    const { ledger, send } = setup();
    for (let i = 0; i < 10; i++) send(request(i % 2 === 0 ? 'red' : 'green'));
    for (let i = 0; i < 4; i++) send(request('blue'));
    expect(ledger.tally('acme', 'red')).toMatchObject({
      role: 'Proposed',
      evaluated: 14,
      matched: 5,
      flips: 5,
      firstMs: 1_001,
      lastMs: 1_014,
      lastFlipMs: 1_009,
    });
    expect(ledger.tally('acme', 'red')?.examples.map((e) => e.time)).toEqual([
      '1970-01-01T00:00:01.001Z',
      '1970-01-01T00:00:01.003Z',
      '1970-01-01T00:00:01.005Z',
    ]);
    expect(ledger.session).toBe(`pod-a-${(1_000).toString(36)}`);
    expect(ledger.takeChanged()).toEqual(['acme/red']);
    expect(ledger.takeChanged()).toEqual([]);
    send(request('red'));
    expect(ledger.takeChanged()).toEqual(['acme/red']);
  });

  it('starts again at every spec edit, many in a row, counting only what came after the last', () => {
    const { ledger, send, edit } = setup();
    for (let e = 0; e < 50; e++) {
      edit(`principal.team == "red" || principal.n == ${e}`);
      expect(ledger.tally('acme', 'red')).toBeUndefined();
      for (let i = 0; i <= e % 4; i++) send(request('red'));
      expect(ledger.tally('acme', 'red')).toMatchObject({ evaluated: (e % 4) + 1, flips: (e % 4) + 1 });
    }
    // The same spec compiled again (a new model) also starts again: a tally is for one compiled spec.
    expect([...ledger.all()]).toHaveLength(1);
  });

  it('keeps counting across publishes that did not change the rule, and forgets it once the proposal is gone', () => {
    const { ledger, send, live, shadow } = setup();
    send(request('red'));
    // A publish of something else: the same proposal is followed, nothing is dropped.
    ledger.follow('acme', { index: live, shadow: shadow() });
    send(request('red'));
    expect(ledger.tally('acme', 'red')?.evaluated).toBe(2);
    ledger.takeChanged();
    ledger.follow('acme', { index: live, shadow: undefined });
    expect(ledger.tally('acme', 'red')).toBeUndefined();
    expect(ledger.takeChanged()).toEqual(['acme/red']);
  });

  it('holds a flood of decisions in constant memory: three examples, exact counts', () => {
    const { ledger, send } = setup('true');
    for (let i = 0; i < 100_000; i++) send(request('green', { i }));
    const t = ledger.tally('acme', 'red');
    expect(t).toMatchObject({ evaluated: 100_000, matched: 100_000, flips: 100_000 });
    expect(t?.examples.map((e) => JSON.parse(e.input).principal.i)).toEqual([0, 1, 2]);
  });

  it('redacts examples as the decision log does, and cuts them to 1,024 characters', () => {
    const secret = input({
      principal: { type: 'user', id: 'u', password: 'hunter2', note: `Bearer ${'x'.repeat(20)}` },
      action: 'read',
      resource: { type: 'document', id: 'd', body: 'é'.repeat(3000) },
    });
    const text = exampleText(secret);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('x'.repeat(20));
    expect(text.length).toBe(MAX_EXAMPLE_CHARS);
    const emoji = exampleText(
      input({ principal: { type: 'user', id: 'u' }, action: 'read', resource: { type: 'd', id: '😀'.repeat(600) } }),
    );
    expect(emoji.length).toBeLessThanOrEqual(MAX_EXAMPLE_CHARS);
    expect(emoji.endsWith('\ud83d')).toBe(false);
  });
});
