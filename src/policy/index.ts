export type { Cond, Json, RuleModel, Value } from './model.ts';
export { pathsOf, pathText } from './model.ts';
export { compileCondition } from './cel.ts';
export {
  buildIndex,
  buildIndexSteps,
  byRuleName,
  rulePosition,
  updateIndex,
  compileConditionFn,
  compileRule,
  decide,
  matchingRules,
  ERROR,
  TRUE,
  type CompiledRule,
  type Decision,
  type DecisionInput,
  type RuleIndex,
} from './evaluate.ts';
export { ruleTranslation, translate, translatePartsSteps } from './rego.ts';
export { translateRule } from './regorule.ts';
export type { RegoVersion } from './regotext.ts';
export { ruleModel } from './rule.ts';
export { toDecisionInput } from './input.ts';
export { shadowDecide, type ShadowSet, type ShadowVisit } from './shadow.ts';
export {
  buildDirectory,
  buildDirectorySteps,
  updateDirectory,
  EMPTY_DIRECTORY,
  type EntityChange,
  type DirectoryEntity,
  type EntityDirectory,
} from './directory.ts';
export { normalizeInput } from './normalize.ts';
export { codePointCompare, type JsonMap } from './values.ts';
export { parseExactJson } from './json.ts';
