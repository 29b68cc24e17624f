// lintObjects as a whole: tenants apart, invalid specs left to status, a deterministic order, the
// ignore annotation, the one-line format, and the docs listing every code.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECKS } from './checks.ts';
import { ANNOTATION_LINT_IGNORE, formatFinding, type LintObject, lintObjects } from './index.ts';

const API = 'acl.policyagent.dev/v1alpha1';

function object(
  kind: LintObject['kind'],
  namespace: string,
  name: string,
  spec: unknown,
  annotations?: Record<string, string>,
): LintObject {
  return {
    kind,
    namespace,
    name,
    raw: { apiVersion: API, kind, metadata: { name, namespace, ...(annotations ? { annotations } : {}) }, spec },
  };
}
const rule = (namespace: string, name: string, spec: Record<string, unknown> = {}, annotations?: Record<string, string>): LintObject =>
  object('Rule', namespace, name, { subjectType: 'user', actions: ['read'], resourceType: 'doc', ...spec }, annotations);

describe('lintObjects', () => {
  it('lints each namespace as its own tenant', () => {
    // The Bundle of "a" selects rules of "a" only; the Connector of "b" is named by no Bundle of "b".
    const findings = lintObjects([
      object('Connector', 'a', 'c', {}),
      object('Bundle', 'a', 'bundle', { connector: 'c' }),
      rule('a', 'r', { state: 'Enforced' }),
      object('Connector', 'b', 'c', {}),
      rule('b', 'r', { state: 'Enforced' }),
    ]);
    expect(findings.map((f) => `${f.namespace}/${f.name} ${f.code}`)).toEqual(['b/c ConnectorUnused']);
  });

  it('leaves objects whose spec is invalid to their status: no findings on them, and nothing counted from them', () => {
    const findings = lintObjects([
      rule('t', 'bad-condition', { condition: 'principal.properties.x +' }),
      rule('t', 'bad-actions', { actions: [] }),
      object('Bundle', 't', 'bad', { connector: 'c', unknown: true }),
      object('Connector', 't', 'c', {}),
      object('Directory', 't', 'dup', {
        entities: [
          { type: 'x', id: '1' },
          { type: 'x', id: '1' },
        ],
      }),
      object('Rule', 't', 'no-spec', undefined),
    ]);
    // The Connector is named by no valid Bundle.
    expect(findings.map((f) => `${f.name} ${f.code}`)).toEqual(['c ConnectorUnused']);
  });

  it('lists findings by namespace, kind, name and check, whatever the input order', () => {
    const objects = [
      object('Bundle', 'z', 'b', { connector: 'missing', entityTypes: ['nothing'] }),
      rule('z', 'r2', { state: 'Enforced', condition: 'principal.properties.a == 1' }),
      rule('z', 'r1', { state: 'Enforced', condition: 'principal.properties.a == 1' }),
      object('Connector', 'y', 'c', {}),
    ];
    const expected = [
      'y Connector c ConnectorUnused',
      'z Rule r1 PropertiesPath',
      'z Rule r1 RuleNotBundled',
      'z Rule r2 PropertiesPath',
      'z Rule r2 RuleNotBundled',
      'z Rule r2 DuplicateRule',
      'z Bundle b BundleSelectsNoRules',
      'z Bundle b EntityTypeUnused',
    ];
    const text = (o: LintObject[]): string[] => lintObjects(o).map((f) => `${f.namespace} ${f.kind} ${f.name} ${f.code}`);
    expect(text(objects)).toEqual(expected);
    expect(text([...objects].reverse())).toEqual(expected);
  });

  it('drops the findings whose codes the object lists in its lint-ignore annotation', () => {
    const objects = (ignore: string): LintObject[] => [
      rule('t', 'r', { condition: 'principal.properties.a == 1' }, { [ANNOTATION_LINT_IGNORE]: ignore }),
    ];
    expect(lintObjects(objects('')).map((f) => f.code)).toEqual(['PropertiesPath', 'StateNotSet']);
    expect(lintObjects(objects('StateNotSet')).map((f) => f.code)).toEqual(['PropertiesPath']);
    expect(lintObjects(objects('PropertiesPath, StateNotSet'))).toEqual([]);
  });

  it('follows an object whose spec was replaced (facts are cached per spec object)', () => {
    const before = rule('t', 'r', { state: 'Draft', condition: 'principal.properties.a == 1' });
    expect(lintObjects([before]).map((f) => f.code)).toEqual(['PropertiesPath']);
    const after = rule('t', 'r', { state: 'Draft', condition: 'principal.a == 1' });
    expect(lintObjects([after])).toEqual([]);
    expect(lintObjects([before]).map((f) => f.code)).toEqual(['PropertiesPath']);
  });

  it('keeps the manifest file of a finding and formats it as one line', () => {
    const [f] = lintObjects([{ ...rule('t', 'r'), source: 'rules/a.yaml' }]);
    expect(f?.source).toBe('rules/a.yaml');
    expect(formatFinding({ ...f!, source: 'rules/a.yaml', code: 'X', message: 'what', hint: 'how' })).toBe(
      'rules/a.yaml: Rule t/r: X: what. Fix: how.',
    );
    const [g] = lintObjects([rule('t', 's')]);
    expect(g && formatFinding(g)).toBe(
      'Rule t/s: StateNotSet: spec.state is not set, so the rule is a Draft: the service does not decide with it and no bundle carries it. Fix: write state: Enforced to deploy it, or state: Draft to say it is a draft.',
    );
  });

  it('has a row in docs/testing.md for every code, and codes that are unique and UpperCamelCase', () => {
    const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'testing.md'), 'utf8');
    const codes = CHECKS.map((c) => c.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) {
      expect(code).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(docs).toMatch(new RegExp(`^\\| \`${code}\` \\|`, 'm'));
    }
  });
});
