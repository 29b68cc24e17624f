// Loads the recorded conformance corpus (test/fixtures/conformance, copied from shared/conformance)
// with the same loader and schema as real rules.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseManifests } from '../../src/api/index.ts';
import { ruleModel, type RuleModel } from '../../src/policy/index.ts';

export const CONFORMANCE_DIR = join(import.meta.dirname, '..', 'fixtures', 'conformance');

export interface Vector {
  readonly line: number;
  readonly input: unknown;
  readonly allow: boolean;
  readonly matches: readonly string[];
}

/** Every rule in rules.yaml (all states), compiled; throws if any document or condition is rejected. */
export function conformanceRules(): RuleModel[] {
  const { manifests, errors } = parseManifests(readFileSync(join(CONFORMANCE_DIR, 'rules.yaml'), 'utf8'), 'rules.yaml');
  if (errors.length > 0) throw new Error(`rules.yaml: ${errors.map((e) => e.message).join('; ')}`);
  return manifests.map((m) => {
    if (m.kind !== 'Rule') throw new Error(`rules.yaml holds a ${m.kind}`);
    const r = ruleModel(m.object);
    if (!r.ok) throw new Error(`rule ${m.object.metadata.name}: ${r.error.message}`);
    return r.model;
  });
}

export function conformanceVectors(): Vector[] {
  const text = readFileSync(join(CONFORMANCE_DIR, 'vectors.jsonl'), 'utf8');
  return text.split('\n').flatMap((line, i) => {
    if (line.trim() === '') return [];
    const v = JSON.parse(line) as { input: unknown; allow: boolean; matches: string[] };
    return [{ line: i + 1, input: v.input, allow: v.allow, matches: v.matches }];
  });
}
