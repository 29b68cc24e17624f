import { compileCondition, toDecisionInput, type DecisionInput, type RuleModel } from '../../src/policy/index.ts';

export type RuleOverrides = Partial<Omit<RuleModel, 'condition' | 'conditionText'>> & { condition?: string };

/** An Enforced rule of tenant acme (user reads document) with the given changes; throws on a bad condition. */
export function ruleModelFor(name: string, over: RuleOverrides = {}): RuleModel {
  const compiled = over.condition === undefined ? undefined : compileCondition(over.condition);
  if (compiled && !compiled.ok) throw new Error(compiled.error.message);
  const { condition, ...rest } = over;
  return {
    namespace: 'acme',
    name,
    state: 'Enforced',
    description: undefined,
    subjectType: 'user',
    actions: ['read'],
    resourceType: 'document',
    ...rest,
    conditionText: condition,
    condition: compiled?.cond,
  };
}

/** A decision input from a document a test writes (throws on one the evaluator would refuse). */
export function decisionInput(doc: object): DecisionInput {
  const d = toDecisionInput(doc);
  if (typeof d === 'string') throw new Error(d);
  return d;
}
