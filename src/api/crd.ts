import { z } from 'zod';
import { stringify } from 'yaml';
import { BundleSpec, BundleStatus } from './bundle.ts';
import { ConnectorSpec, ConnectorStatus } from './connector.ts';
import { DirectorySpec, DirectoryStatus } from './directory.ts';
import { GROUP, VERSION } from './meta.ts';
import { RuleSpec, RuleStatus } from './rule.ts';

interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'date' | 'boolean';
  jsonPath: string;
  description?: string;
  priority?: number;
}

interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  columns: PrinterColumn[];
}

const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
/** The code of the first lint finding (the Warning condition's reason; docs/testing.md#lint): empty when clean. */
const WARNING: PrinterColumn = {
  name: 'Warning',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Warning")].reason',
  description: 'The first lint finding (kubectl describe shows them all)',
};

/** The kinds we own, in the order `make crds` writes them. */
export const KINDS: readonly KindDefinition[] = [
  {
    kind: 'Rule',
    plural: 'rules',
    singular: 'rule',
    shortNames: ['aclrule'],
    description: 'One authorization rule: a subject type may perform actions on a resource type when a CEL condition holds.',
    spec: RuleSpec,
    status: RuleStatus,
    columns: [
      { name: 'State', type: 'string', jsonPath: '.spec.state' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Subject', type: 'string', jsonPath: '.spec.subjectType' },
      { name: 'Actions', type: 'string', jsonPath: '.spec.actions' },
      { name: 'Resource', type: 'string', jsonPath: '.spec.resourceType' },
      { name: 'Translation', type: 'string', jsonPath: '.status.translation.status', priority: 1 },
      { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 },
      {
        name: 'Shadow',
        type: 'string',
        jsonPath: '.status.shadow.summary',
        description: 'What live traffic says of a Proposed rule or one marked for removal, e.g. "would allow 12 of 3,400"',
      },
      WARNING,
      AGE,
    ],
  },
  {
    kind: 'Connector',
    plural: 'connectors',
    singular: 'connector',
    shortNames: ['aclconn'],
    description: 'A group of OPA instances that share one bearer token and poll the bundles that name this connector.',
    spec: ConnectorSpec,
    status: ConnectorStatus,
    columns: [
      { name: 'Display', type: 'string', jsonPath: '.spec.displayName' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Token-Secret', type: 'string', jsonPath: '.status.tokenSecretName' },
      { name: 'Token-Issued', type: 'date', jsonPath: '.status.tokenIssuedAt' },
      WARNING,
      AGE,
    ],
  },
  {
    kind: 'Bundle',
    plural: 'bundles',
    singular: 'bundle',
    shortNames: ['aclbundle'],
    description: "A subset of the tenant's Enforced rules, translated to Rego and served as a tar.gz to a connector's OPA instances.",
    spec: BundleSpec,
    status: BundleStatus,
    columns: [
      { name: 'Connector', type: 'string', jsonPath: '.spec.connector' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Revision', type: 'integer', jsonPath: '.status.revision' },
      { name: 'Rules', type: 'integer', jsonPath: '.status.ruleCount' },
      {
        name: 'Agents',
        type: 'string',
        jsonPath: '.status.agents.rollout',
        description: 'OPA agents on the revision served / agents reporting',
      },
      { name: 'Rolled-Out', type: 'string', jsonPath: '.status.conditions[?(@.type=="RolledOut")].status', priority: 1 },
      { name: 'Last-Sync', type: 'date', jsonPath: '.status.lastSync' },
      { name: 'ETag', type: 'string', jsonPath: '.status.etag', priority: 1 },
      { name: 'Signing-Key', type: 'string', jsonPath: '.status.signingKey', priority: 1 },
      WARNING,
      AGE,
    ],
  },
  {
    kind: 'Directory',
    plural: 'directories',
    singular: 'directory',
    shortNames: ['acldir'],
    description:
      "Entities (subjects and resources) with properties that decisions read when a request names them: the tenant's policy information point.",
    spec: DirectorySpec,
    status: DirectoryStatus,
    columns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Entities', type: 'integer', jsonPath: '.status.entityCount' },
      { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 },
      WARNING,
      AGE,
    ],
  },
];

type JsonSchema = { [key: string]: unknown };

/**
 * Turns zod's OpenAPI 3.0 output into a Kubernetes structural schema: no `$schema`, no `$ref`, and no
 * `additionalProperties: false` (the API server prunes unknown fields instead, and rejects that keyword
 * next to `properties`). Integer bounds that only restate JavaScript's safe range are dropped.
 */
function structural(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(structural);
  if (node === null || typeof node !== 'object') return node;
  // Free-form JSON (entity properties): the API server keeps it as written.
  if ((node as JsonSchema)['x-kubernetes-preserve-unknown-fields'] === true) {
    const { description } = node as JsonSchema;
    return { type: 'object', ...(description === undefined ? {} : { description }), 'x-kubernetes-preserve-unknown-fields': true };
  }
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    // `properties` maps field names (an `id` field among them) to schemas: none is a keyword.
    if (key === 'properties' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, structural(schema)]));
      continue;
    }
    if (key === '$schema' || key === 'id') continue;
    if (key === '$ref' || key === '$defs' || key === 'definitions') throw new Error(`CRD schemas must not use ${key}`);
    if (key === 'additionalProperties' && value === false) continue;
    if ((key === 'maximum' && value === Number.MAX_SAFE_INTEGER) || (key === 'minimum' && value === Number.MIN_SAFE_INTEGER)) continue;
    out[key] = structural(value);
  }
  return out;
}

/** The OpenAPI v3 schema of a kind's `spec` or `status`, as the CRD carries it. */
export function openApiSchema(schema: z.ZodType): JsonSchema {
  return structural(z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' })) as JsonSchema;
}

/** The CustomResourceDefinition object for one kind. */
export function crdFor(def: KindDefinition): JsonSchema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['acl'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.columns,
          schema: {
            openAPIV3Schema: {
              description: def.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: openApiSchema(def.spec),
                status: openApiSchema(def.status),
              },
            },
          },
        },
      ],
    },
  };
}

/** `crds/<plural>.yaml` file name and content for every kind: what `make crds` writes. */
export function renderCrds(): { file: string; yaml: string }[] {
  return KINDS.map((def) => ({
    file: `${GROUP}_${def.plural}.yaml`,
    yaml: `# Generated by \`make crds\` from src/api. Do not edit.\n${stringify(crdFor(def), { lineWidth: 0 })}`,
  }));
}

/**
 * `crds/Kustomization`, so `kubectl apply -k crds` (and deploy/) install every CRD. Named without
 * .yaml so that `kubectl apply -f crds/` does not try to apply it as an object.
 */
export function renderCrdKustomization(): string {
  return `# Generated by \`make crds\`. Do not edit.\n${stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: renderCrds().map((c) => c.file) }, { lineWidth: 0 })}`;
}
