// The folders the steady-under-change benchmark serves and edits: tenant `bench` with 10,000 rules in
// one file (as bench/http), and optionally tenant `people` with 500,000 entities in 100 Directories
// of 5,000 and one rule reading a directory property.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_KEY, manifestFiles, ruleManifest, tenantRules, type GeneratedRule } from '../http/tenant.ts';

export const DIRECTORY_TENANT = 'people';
export const DIRECTORIES = 100;
export const PER_DIRECTORY = 5_000;

export function rulesFile(rules: readonly GeneratedRule[], edit: number): string {
  // Edit n changes rule n % 10,000's condition constant: one rule among 10,000 differs each time.
  const i = edit % rules.length;
  return `${rules.map((r, k) => ruleManifest(k === i && edit > 0 ? { ...r, condition: `${r.condition} && principal.id != "edit-${edit}"` } : r)).join('\n---\n')}\n`;
}

export function directoryFile(d: number, edit: number): string {
  const entities = Array.from({ length: PER_DIRECTORY }, (_, i) => {
    const team = i === 0 && edit > 0 ? `team-${edit}` : i % 7 === 0 ? 'blue' : 'red';
    return `    - { type: user, id: u-${d}-${i}, properties: { team: ${team}, email: u${i}@example.com } }`;
  });
  return `apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: dir-${String(d).padStart(3, '0')}, namespace: ${DIRECTORY_TENANT} }
spec:
  entities:
${entities.join('\n')}
`;
}

/** Tenant `people`: a rule reading `principal.team`, a Connector, a Bundle and an API key. */
export function directoryTenant(): string {
  return `apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: same-team, namespace: ${DIRECTORY_TENANT} }
spec: { state: Enforced, subjectType: user, actions: [read], resourceType: doc, condition: principal.team == resource.team }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: opa, namespace: ${DIRECTORY_TENANT} }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: all, namespace: ${DIRECTORY_TENANT} }
spec: { connector: opa }
---
apiVersion: v1
kind: Secret
metadata: { name: key, namespace: ${DIRECTORY_TENANT}, labels: { acl.policyagent.dev/api-key: "true" } }
stringData: { token: ${API_KEY}-people }
`;
}

/** Writes the folder: bench's access.yaml and rules.yaml, and with `directory` the people tenant. */
export async function writeFolder(dir: string, rules: readonly GeneratedRule[], directory: boolean): Promise<void> {
  const files = manifestFiles(rules);
  await writeFile(join(dir, 'access.yaml'), files['access.yaml'] as string);
  await writeFile(join(dir, 'rules.yaml'), rulesFile(rules, 0));
  if (!directory) return;
  await writeFile(join(dir, 'people.yaml'), directoryTenant());
  for (let d = 0; d < DIRECTORIES; d++) await writeFile(join(dir, `dir-${String(d).padStart(3, '0')}.yaml`), directoryFile(d, 0));
}

export { tenantRules };
