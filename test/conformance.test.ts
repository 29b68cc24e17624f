import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildIndex, compileRule, decide, matchingRules, parseExactJson, toDecisionInput } from '../src/policy/index.ts';
import { CONFORMANCE_DIR, conformanceRules, conformanceVectors } from './support/conformance.ts';

const rules = conformanceRules();
const enforced = rules.filter((r) => r.state === 'Enforced');
const index = buildIndex('conformance', enforced.map(compileRule));
const vectors = conformanceVectors();

describe('recorded OPA conformance corpus', () => {
  it('loads all 46 rules, 41 of them Enforced, and every one of the 6,001 vectors', () => {
    expect(rules).toHaveLength(46);
    expect(enforced).toHaveLength(41);
    expect(vectors).toHaveLength(6001);
  });

  it('holds only numbers a double represents exactly, so OPA and the evaluator read the same values', () => {
    const lines = readFileSync(join(CONFORMANCE_DIR, 'vectors.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
    const refused = lines.map((l, i) => [i + 1, parseExactJson(l)] as const).filter(([, r]) => !r.ok);
    expect(refused).toEqual([]);
  });

  it('treats a rule with no state as a Draft', () => {
    expect(rules.find((r) => r.name === 'unstated-defaults-to-draft')?.state).toBe('Draft');
  });

  it('reproduces every recorded decision and the exact set of matching rules', () => {
    const mismatches: string[] = [];
    for (const v of vectors) {
      const input = toDecisionInput(v.input);
      if (typeof input === 'string') {
        mismatches.push(`line ${v.line}: ${input}`);
        continue;
      }
      const matches = matchingRules(index, input);
      const decision = decide(index, input);
      if (decision.allow !== v.allow || JSON.stringify(matches) !== JSON.stringify(v.matches)) {
        mismatches.push(
          `line ${v.line}: allow ${decision.allow} (recorded ${v.allow}), matches ${JSON.stringify(matches)} (recorded ${JSON.stringify(v.matches)})`,
        );
      }
    }
    expect(mismatches.slice(0, 20)).toEqual([]);
    expect(mismatches).toHaveLength(0);
  });
});
