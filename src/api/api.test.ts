import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYamlText } from 'yaml';
import { Bundle, Connector, KINDS, Rule, renderCrdKustomization, renderCrds } from './index.ts';

const meta = (name: string, namespace = 'acme') => ({ name, namespace });
const rule = (spec: Record<string, unknown>, name = 'team-documents') => ({
  apiVersion: 'acl.policyagent.dev/v1alpha1',
  kind: 'Rule',
  metadata: meta(name),
  spec,
});

describe('Rule schema', () => {
  it('accepts the design example and defaults state to Draft', () => {
    const r = Rule.parse(
      rule({ subjectType: 'user', actions: ['read', 'write'], resourceType: 'document', condition: 'principal.team == resource.team' }),
    );
    expect(r.spec.state).toBe('Draft');
    expect(r.spec.actions).toEqual(['read', 'write']);
  });

  it.each([
    ['no actions', { subjectType: 'user', actions: [], resourceType: 'document' }, 'actions'],
    ['a repeated action', { subjectType: 'user', actions: ['read', 'read'], resourceType: 'document' }, 'must not repeat'],
    ['an unknown state', { state: 'Live', subjectType: 'user', actions: ['read'], resourceType: 'document' }, 'state'],
    ['a type with a space', { subjectType: 'user ', actions: ['read'], resourceType: 'document' }, 'subjectType'],
    ['a misspelt field', { subjectType: 'user', actions: ['read'], resourceType: 'document', condtion: 'true' }, 'condtion'],
    ['an empty condition', { subjectType: 'user', actions: ['read'], resourceType: 'document', condition: '' }, 'condition'],
    ['a missing resourceType', { subjectType: 'user', actions: ['read'] }, 'resourceType'],
  ])('rejects %s', (_, spec, needle) => {
    const res = Rule.safeParse(rule(spec));
    expect(res.success).toBe(false);
    expect(JSON.stringify(res.error?.issues)).toContain(needle);
  });

  it('rejects a name Kubernetes would not accept', () => {
    expect(Rule.safeParse(rule({ subjectType: 'user', actions: ['read'], resourceType: 'document' }, 'Team_Docs')).success).toBe(false);
  });
});

describe('Connector schema', () => {
  it('defaults to active, unrevoked, rotation 0', () => {
    const c = Connector.parse({ apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Connector', metadata: meta('gateways'), spec: {} });
    expect(c.spec).toEqual({ active: true, tokenRotation: 0, revoked: false });
  });

  it.each([
    ['a negative rotation', { tokenRotation: -1 }],
    ['a fractional rotation', { tokenRotation: 1.5 }],
    ['a string flag', { active: 'yes' }],
  ])('rejects %s', (_, spec) => {
    expect(
      Connector.safeParse({ apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Connector', metadata: meta('gateways'), spec }).success,
    ).toBe(false);
  });
});

describe('Bundle schema', () => {
  const bundle = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'acl.policyagent.dev/v1alpha1',
    kind: 'Bundle',
    metadata: meta(name),
    spec,
  });

  it('accepts a filtered v1 bundle and defaults regoVersion to 0', () => {
    expect(Bundle.parse(bundle('gateway-policies', { connector: 'gateways', entityTypes: ['document'] })).spec.regoVersion).toBe(0);
    expect(Bundle.parse(bundle('gateway-policies', { connector: 'gateways', regoVersion: 1 })).spec.regoVersion).toBe(1);
  });

  it.each([
    ['a name with a dot (bundle names are alphanumeric with hyphens)', 'gateway.policies', { connector: 'gateways' }],
    ['a name with an underscore', 'gateway_policies', { connector: 'gateways' }],
    ['rego version 2', 'b', { connector: 'gateways', regoVersion: 2 }],
    ['no connector', 'b', {}],
  ])('rejects %s', (_, name, spec) => {
    expect(Bundle.safeParse(bundle(name, spec)).success).toBe(false);
  });
});

describe('generated CRDs', () => {
  const dir = join(import.meta.dirname, '..', '..', 'crds');

  it('match the committed crds/ exactly (run `make crds` after changing a schema)', () => {
    for (const { file, yaml } of renderCrds()) expect(readFileSync(join(dir, file), 'utf8'), file).toBe(yaml);
    expect(readFileSync(join(dir, 'Kustomization'), 'utf8')).toBe(renderCrdKustomization());
  });

  it('are structural: every node has a type, and there is no $ref, anyOf, oneOf or additionalProperties: false', () => {
    const problems: string[] = [];
    const walk = (node: Record<string, unknown>, path: string): void => {
      if (typeof node['type'] !== 'string') problems.push(`${path}: no type`);
      for (const bad of ['$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'nullable']) if (bad in node) problems.push(`${path}: ${bad}`);
      if (node['additionalProperties'] === false) problems.push(`${path}: additionalProperties false`);
      const props = node['properties'] as Record<string, Record<string, unknown>> | undefined;
      for (const [k, v] of Object.entries(props ?? {})) walk(v, `${path}.${k}`);
      if (node['items']) walk(node['items'] as Record<string, unknown>, `${path}[]`);
      if (typeof node['additionalProperties'] === 'object') walk(node['additionalProperties'] as Record<string, unknown>, `${path}{}`);
    };
    for (const { yaml } of renderCrds()) {
      const crd = parseYaml(yaml);
      walk(crd.spec.versions[0]!.schema.openAPIV3Schema, crd.metadata.name);
    }
    expect(problems).toEqual([]);
  });

  it('have a status subresource, short names and the printer columns people look for', () => {
    const byKind: Record<string, CrdDocument> = Object.fromEntries(
      renderCrds().map(({ yaml }) => {
        const c = parseYaml(yaml);
        return [c.spec.names.kind, c];
      }),
    );
    expect(Object.keys(byKind)).toEqual(KINDS.map((k) => k.kind));
    const columns = (kind: string) => byKind[kind]!.spec.versions[0]!.additionalPrinterColumns.map((c) => c.name);
    expect(columns('Rule')).toEqual(expect.arrayContaining(['State', 'Phase', 'Subject', 'Actions', 'Resource']));
    expect(columns('Bundle')).toEqual(expect.arrayContaining(['Connector', 'Phase', 'Revision', 'Rules', 'Last-Sync']));
    expect(columns('Rule')).toContain('Reason');
    expect(columns('Bundle')).toContain('Signing-Key');
    for (const c of Object.values(byKind)) {
      expect(c.spec.versions[0]!.subresources).toEqual({ status: {} });
      expect(c.spec.names.shortNames.length).toBeGreaterThan(0);
      expect(c.spec.scope).toBe('Namespaced');
    }
  });
});

interface CrdDocument {
  metadata: { name: string };
  spec: {
    scope: string;
    names: { kind: string; shortNames: string[] };
    versions: {
      subresources: unknown;
      additionalPrinterColumns: { name: string }[];
      schema: { openAPIV3Schema: Record<string, unknown> };
    }[];
  };
}

function parseYaml(text: string): CrdDocument {
  return parseYamlText(text) as CrdDocument;
}
