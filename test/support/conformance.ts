// Loads the recorded conformance corpus (test/fixtures/conformance, copied from shared/conformance)
// with the same loader and schema as real rules, and lays it out as a manifests folder.
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Rule } from '../../src/api/index.ts';
import { ruleModel, type RuleModel } from '../../src/policy/index.ts';
import { readObjects } from '../../src/standalone/index.ts';

export const CONFORMANCE_DIR = join(import.meta.dirname, '..', 'fixtures', 'conformance');

export interface Vector {
  readonly line: number;
  readonly input: unknown;
  readonly allow: boolean;
  readonly matches: readonly string[];
}

/**
 * The rules of a YAML text, read as `serve` reads them (the one manifest reader, then the Rule
 * schema) and compiled, in every state; throws if any document, spec or condition is rejected.
 */
export function ruleModelsOf(text: string, source: string): RuleModel[] {
  const { objects, problems } = readObjects(text, source);
  if (problems.length > 0) throw new Error(`${source}: ${problems.map((p) => p.message).join('; ')}`);
  return objects.map((o) => {
    if (o.kind !== 'Rule') throw new Error(`${source} holds a ${o.kind}`);
    const parsed = Rule.safeParse(o.raw);
    if (!parsed.success) throw new Error(`rule ${o.metadata.name}: ${parsed.error.message}`);
    const r = ruleModel(parsed.data);
    if (!r.ok) throw new Error(`rule ${o.metadata.name}: ${r.error.message}`);
    return r.model;
  });
}

/** Every rule in rules.yaml (all states), compiled; throws if any document or condition is rejected. */
export function conformanceRules(): RuleModel[] {
  return ruleModelsOf(readFileSync(join(CONFORMANCE_DIR, 'rules.yaml'), 'utf8'), 'rules.yaml');
}

/**
 * A manifests folder of the corpus: rules.yaml as recorded, and for every tenant (namespace) in it
 * a connector `opa` with two bundles, every rule in Rego v0 and every rule in Rego v1.
 */
export async function writeConformanceFolder(dir: string): Promise<string[]> {
  const tenants = [...new Set(conformanceRules().map((r) => r.namespace))].sort();
  const doc = (kind: string, name: string, tenant: string, spec: string): string =>
    `apiVersion: acl.policyagent.dev/v1alpha1\nkind: ${kind}\nmetadata: { name: ${name}, namespace: ${tenant} }\nspec: ${spec}\n`;
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'rules.yaml'), readFileSync(join(CONFORMANCE_DIR, 'rules.yaml')));
  const distribution = tenants.flatMap((t) => [
    doc('Connector', 'opa', t, '{}'),
    doc('Bundle', 'all', t, '{ connector: opa }'),
    doc('Bundle', 'all-v1', t, '{ connector: opa, regoVersion: 1 }'),
  ]);
  await writeFile(join(dir, 'distribution.yaml'), distribution.join('---\n'));
  return tenants;
}

export function conformanceVectors(): Vector[] {
  const text = readFileSync(join(CONFORMANCE_DIR, 'vectors.jsonl'), 'utf8');
  return text.split('\n').flatMap((line, i) => {
    if (line.trim() === '') return [];
    const v = JSON.parse(line) as { input: unknown; allow: boolean; matches: string[] };
    return [{ line: i + 1, input: v.input, allow: v.allow, matches: v.matches }];
  });
}
