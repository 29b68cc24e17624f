export { API_VERSION, GROUP, VERSION, Condition, DnsLabel, DnsSubdomain, ObjectMeta, TypeName } from './meta.ts';
export { Rule, RulePhase, RuleSpec, RuleState, RuleStatus, type RuleSpecInput } from './rule.ts';
export { Connector, ConnectorSpec, ConnectorStatus } from './connector.ts';
export { Bundle, BundleSpec, BundleStatus } from './bundle.ts';
export { Directory, DirectoryEntity, DirectorySpec, DirectoryStatus, MAX_ENTITIES } from './directory.ts';
export { KINDS, crdFor, openApiSchema, renderCrdKustomization, renderCrds } from './crd.ts';
export { describeIssues } from './issues.ts';
export { isObject } from './json.ts';
export { readStatus } from './meta.ts';
