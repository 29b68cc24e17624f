export type { Cidr, CompareOp, Cond, Json, Literal, Root, RuleModel, TimePart, Value } from './model.ts';
export { pathText, pathsOf, walkCondition } from './model.ts';
export { compileCondition, type CompileResult, type ConditionError } from './cel.ts';
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
  testRule,
  ERROR,
  FALSE,
  TRUE,
  type CompiledRule,
  type Decision,
  type DecisionInput,
  type RuleIndex,
  type Truth,
} from './evaluate.ts';
export { translate, translatePartsSteps, type TranslateOptions } from './rego.ts';
export { translateRule, type RuleRego } from './regorule.ts';
export { regoString, type RegoVersion } from './regotext.ts';
export { ruleModel, type RuleModelResult } from './rule.ts';
export { toDecisionInput } from './input.ts';
export {
  buildDirectory,
  buildDirectorySteps,
  updateDirectory,
  EMPTY_DIRECTORY,
  type EntityChange,
  neededProperties,
  withDirectory,
  type DirectoryEntity,
  type EntityDirectory,
} from './directory.ts';
export { normalizeInput, ERR, type JsonMap } from './values.ts';
export { parseExactJson, type ParsedJson } from './json.ts';
