// Builds the bundle of src/bundle/bundle.test.ts in a separate process and prints its digest, so the
// test can prove the bytes do not depend on the process that made them. With a key file (PEM) as
// argument, and optionally a second, the revision is signed by the first (current) and the second
// (previous): it prints the digest of each archive, one a line.
import { readFileSync } from 'node:fs';
import { buildBundle, selectRules } from '../../src/bundle/index.ts';
import { readSigningKey } from '../../src/signing/index.ts';
import { ruleModelFor } from './rules.ts';

const rules = [
  ruleModelFor('groups-datasets', { subjectType: 'group', resourceType: 'dataset' }),
  ruleModelFor('records-read', { resourceType: 'record' }),
  ruleModelFor('team-documents', { condition: 'principal.team == resource.team' }),
];
const [current, previous] = process.argv.slice(2).map((file) => readSigningKey(readFileSync(file, 'utf8')));
const built = await buildBundle(
  { tenant: 'acme', name: 'gateway-policies', connector: 'gateways', regoVersion: 0, rules: selectRules('acme', rules, {}) },
  3,
  current ? { ring: { current, previous } } : {},
);
console.log([built.digest, ...(built.previous ? [built.previous.digest] : [])].join('\n'));
