import type { Rule } from '../api/index.ts';
import { compileCondition, type ConditionError } from './cel.ts';
import type { RuleModel } from './model.ts';

export type RuleModelResult = { readonly ok: true; readonly model: RuleModel } | { readonly ok: false; readonly error: ConditionError };

/** Builds the policy model of a validated Rule resource, compiling its condition once. */
export function ruleModel(rule: Rule): RuleModelResult {
  const { spec, metadata } = rule;
  let condition: RuleModel['condition'];
  if (spec.condition !== undefined) {
    const compiled = compileCondition(spec.condition);
    if (!compiled.ok) return { ok: false, error: compiled.error };
    condition = compiled.cond;
  }
  return {
    ok: true,
    model: {
      namespace: metadata.namespace,
      name: metadata.name,
      state: spec.state,
      description: spec.description,
      subjectType: spec.subjectType,
      actions: spec.actions,
      resourceType: spec.resourceType,
      conditionText: spec.condition,
      condition,
    },
  };
}
