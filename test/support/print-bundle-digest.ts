// Builds the bundle of src/bundle/bundle.test.ts in a separate process and prints its digest, so the
// test can prove the bytes do not depend on the process that made them.
import { buildBundle, selectRules } from '../../src/bundle/index.ts';
import { ruleModelFor } from './rules.ts';

const rules = [
  ruleModelFor('groups-datasets', { subjectType: 'group', resourceType: 'dataset' }),
  ruleModelFor('records-read', { resourceType: 'record' }),
  ruleModelFor('team-documents', { condition: 'principal.team == resource.team' }),
];
const built = await buildBundle(
  { tenant: 'acme', name: 'gateway-policies', connector: 'gateways', regoVersion: 0, rules: selectRules('acme', rules, {}) },
  3,
);
console.log(built.digest);
