import { describe, expect, it } from 'vitest';
import { compileConditionFn, ERROR, toDecisionInput, TRUE, type RuleModel } from '../src/policy/index.ts';
import { celOracle } from './support/cel-oracle.ts';
import { conformanceRules, conformanceVectors } from './support/conformance.ts';
import { corpusRules, generateInputs } from './support/corpus.ts';

const INPUTS_PER_RULE = 400;

function compare(rules: readonly RuleModel[], inputs: readonly unknown[]): string[] {
  const mismatches: string[] = [];
  for (const rule of rules) {
    if (!rule.condition || !rule.conditionText) continue;
    const ours = compileConditionFn(rule.condition);
    const oracle = celOracle(rule.conditionText);
    for (const raw of inputs) {
      const input = toDecisionInput(raw);
      if (typeof input === 'string') throw new Error(input);
      const t = ours(input);
      const mine = t === TRUE ? 'true' : t === ERROR ? 'error' : 'false';
      const theirs = oracle({ ...input });
      if (mine !== theirs) mismatches.push(`${rule.name}: ours ${mine}, CEL ${theirs} on ${JSON.stringify(input)}`);
    }
  }
  return mismatches;
}

describe('compiled closures agree with the CEL library evaluator', () => {
  it('on every conformance rule for every recorded input', () => {
    const mismatches = compare(
      conformanceRules(),
      conformanceVectors().map((v) => v.input),
    );
    expect(mismatches.slice(0, 10)).toEqual([]);
  });

  it('on every construct of the language for generated inputs', () => {
    const rules = corpusRules();
    const inputs = generateInputs(rules, rules.length * INPUTS_PER_RULE, 20261122);
    const mismatches = compare(rules, inputs);
    expect(mismatches.slice(0, 10)).toEqual([]);
  });

  it('sees every outcome (true, false and error) for every corpus rule, so the comparison is not vacuous', () => {
    const rules = corpusRules().filter((r) => r.name !== 'corpus-constants');
    const inputs = generateInputs(rules, rules.length * INPUTS_PER_RULE, 20261122);
    for (const rule of rules) {
      const f = compileConditionFn(rule.condition!);
      const seen = new Set(inputs.map((raw) => f(toDecisionInput(raw) as Exclude<ReturnType<typeof toDecisionInput>, string>)));
      expect([rule.name, [...seen].sort()]).toEqual([rule.name, [0, 1, 2]]);
    }
  });
});
