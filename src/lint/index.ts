// Lint: what is legal but almost certainly wrong in a tenant's Rules, Connectors, Bundles and
// Directories, each finding with a stable code, the object and a fix (docs/testing.md, "## Lint").
export { type LintKind, rememberDirectoryFacts } from './facts.ts';
export type { LintObject } from './tenant.ts';
export {
  ANNOTATION_LINT_IGNORE,
  findingsText,
  findingText,
  formatFinding,
  lintObjects,
  lintSteps,
  readFindingsText,
  type Finding,
} from './lint.ts';
