export { API_VERSION, Condition, DnsLabel, DnsSubdomain, GROUP, ObjectMeta, VERSION } from './meta.ts';
export { Rule, RulePhase, RuleShadowStatus, RuleSpec, RuleStatus } from './rule.ts';
export { Connector, ConnectorSpec, ConnectorStatus } from './connector.ts';
export { Bundle, BundleSpec, BundleStatus } from './bundle.ts';
export { Directory, DirectoryEntity as DirectoryEntitySchema, DirectoryStatus, MAX_ENTITIES } from './directory.ts';
export { KINDS, renderCrdKustomization, renderCrds } from './crd.ts';
export { describeIssues } from './issues.ts';
export { isObject } from './json.ts';
export { readStatus } from './meta.ts';
