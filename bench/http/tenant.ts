// The tenant the HTTP benchmark serves: generated Rules as YAML manifests (plus the API key, the
// Connector and the Bundle that make them reachable), and decision requests aimed at those rules.
import { CONDITIONS, rng } from '../generate.ts';

export const TENANT = 'bench';
export const CONNECTOR = 'opa';
export const BUNDLE = 'all';
export const API_KEY = 'bench-api-key-0123456789abcdef';
export const BUNDLE_PATH = `/${TENANT}/connectors/policyagent/${CONNECTOR}/bundles/${BUNDLE}`;

const SUBJECT_TYPES = 50;
const ACTIONS = 20;
const RESOURCE_TYPES = 100;

export interface GeneratedRule {
  readonly name: string;
  readonly subjectType: string;
  readonly actions: readonly string[];
  readonly resourceType: string;
  readonly condition: string;
}

interface Entity {
  readonly type: string;
  readonly id: string;
  readonly properties: Readonly<Record<string, unknown>>;
}

/** The body of POST /authorization (service spec 2.1). */
export interface DecisionBody {
  readonly subject: Entity;
  readonly resource: Entity;
  readonly action: string;
  readonly context: Readonly<Record<string, unknown>>;
}

/**
 * `n` rules over 50 subject types, 20 actions and 100 resource types, as bench/run.ts generates
 * them. Each condition carries its own constant (the worst case for memory: nothing is shared).
 */
export function generateRules(n: number, seed: number): GeneratedRule[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const template = CONDITIONS[i % CONDITIONS.length] as string;
    const actions = [...new Set([`action-${Math.floor(r() * ACTIONS)}`, `action-${Math.floor(r() * ACTIONS)}`])];
    return {
      name: `rule-${String(i).padStart(5, '0')}`,
      subjectType: `subject-${Math.floor(r() * SUBJECT_TYPES)}`,
      actions,
      resourceType: `resource-${Math.floor(r() * RESOURCE_TYPES)}`,
      condition: `${template} && principal.id != "nobody-${i}"`,
    };
  });
}

/** The rules a service with `n` rules serves (seeded by `n`, so every process derives the same ones). */
export function tenantRules(n: number): GeneratedRule[] {
  return generateRules(n, n);
}

/** One Rule document; JSON strings are valid YAML scalars, so quoting is JSON.stringify's job. */
export function ruleManifest(rule: GeneratedRule): string {
  return [
    'apiVersion: acl.policyagent.dev/v1alpha1',
    'kind: Rule',
    `metadata: { name: ${rule.name}, namespace: ${TENANT} }`,
    'spec:',
    '  state: Enforced',
    `  subjectType: ${JSON.stringify(rule.subjectType)}`,
    `  actions: ${JSON.stringify(rule.actions)}`,
    `  resourceType: ${JSON.stringify(rule.resourceType)}`,
    `  condition: ${JSON.stringify(rule.condition)}`,
  ].join('\n');
}

/**
 * `n` Proposed rules (shadow decisions): one in ten over a live rule's own subject type,
 * actions and resource type (so the requests, aimed at live rules, meet them), the rest generated
 * over the whole type space as the live ones are. Their conditions are the live templates.
 */
export function proposedRules(live: readonly GeneratedRule[], n: number): GeneratedRule[] {
  return generateRules(n, n + 28).map((r, i) => {
    const over = i % 10 === 0 ? live[(i / 10) % live.length] : undefined;
    const proposed = { ...r, name: `proposed-${String(i).padStart(5, '0')}` };
    return over ? { ...proposed, subjectType: over.subjectType, actions: over.actions, resourceType: over.resourceType } : proposed;
  });
}

/** proposedRules as the YAML documents of `tenant`. */
export function proposalManifest(live: readonly GeneratedRule[], n: number, tenant: string): string {
  const rules = proposedRules(live, n);
  return `${rules
    .map((r) => ruleManifest(r).replace('state: Enforced', 'state: Proposed').replace(`namespace: ${TENANT} }`, `namespace: ${tenant} }`))
    .join('\n---\n')}\n`;
}

/** A Connector and one Bundle of it, as YAML documents. */
export function connectorManifest(tenant: string, connector: string, bundle: string): string {
  return `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: ${connector}, namespace: ${tenant} }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: ${bundle}, namespace: ${tenant} }
spec: { connector: ${connector} }
`;
}

/** The manifests folder: rules in one multi-document file, the rest in another. */
export function manifestFiles(rules: readonly GeneratedRule[]): Record<string, string> {
  return {
    'access.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: bench-key, namespace: ${TENANT}, labels: { acl.policyagent.dev/api-key: "true" } }
stringData: { token: ${API_KEY} }
---${connectorManifest(TENANT, CONNECTOR, BUNDLE)}`,
    'rules.yaml': `${rules.map(ruleManifest).join('\n---\n')}\n`,
  };
}

/**
 * `n` requests, each aimed at a random rule's own (subject type, action, resource type). Even ones
 * carry attributes that satisfy every condition template, odd ones attributes that satisfy none, so
 * half are allowed and half are denied with reasons.
 */
export function decisionBodies(rules: readonly GeneratedRule[], n: number, seed: number): DecisionBody[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const rule = rules[Math.floor(r() * rules.length)] as GeneratedRule;
    const allow = i % 2 === 0;
    return {
      subject: {
        type: rule.subjectType,
        id: `user-${1000 + i}`,
        properties: {
          team: 'blue',
          roles: allow ? ['admin', 'staff'] : ['viewer'],
          level: allow ? 5 : 1,
          email: `user-${1000 + i}@example.com`,
        },
      },
      resource: {
        type: rule.resourceType,
        id: `doc-${i}`,
        properties: {
          team: allow ? 'blue' : 'red',
          owner: 'user-1',
          classification: 'public',
          path: allow ? '/shared/plans.md' : '/home/notes.md',
        },
      },
      action: rule.actions[0] as string,
      context: { ipAddress: allow ? '10.1.2.3' : '192.168.1.7', userAgent: 'bench/1.0' },
    };
  });
}

/** The input document OPA evaluates for a request: what src/authzen/request.ts maps a body onto. */
export function opaInput(body: DecisionBody): Record<string, unknown> {
  const attributes = (e: Entity): Record<string, unknown> => ({ ...e.properties, type: e.type, id: e.id });
  return { principal: attributes(body.subject), action: body.action, resource: attributes(body.resource), context: body.context };
}
