import { z } from 'zod';
import { API_VERSION, Conditions, DnsLabel, ObjectMeta, Timestamp, TypeName } from './meta.ts';

export const BundleSpec = z.strictObject({
  connector: DnsLabel.describe('Name of the Connector (same namespace) whose token opens this bundle.'),
  entityTypes: z
    .array(TypeName)
    .max(256)
    .optional()
    .meta({ 'x-kubernetes-list-type': 'set' })
    .describe('Optional filter: only rules whose subjectType or resourceType is listed. Empty or absent: every rule.'),
  regoVersion: z.number().int().min(0).max(1).default(0).describe('0 (default, OPA 0.40 and later) or 1 (import rego.v1, for OPA 1.x).'),
});
export type BundleSpec = z.infer<typeof BundleSpec>;

export const BundleStatus = z.object({
  phase: z.enum(['Ready', 'Invalid', 'Pending']).optional(),
  observedGeneration: z.number().int().min(0).optional(),
  revision: z.number().int().min(0).optional(),
  digest: z.string().optional(),
  etag: z.string().optional(),
  ruleCount: z.number().int().min(0).optional(),
  signingKey: z
    .string()
    .optional()
    .describe(
      'Key id of the key that signs the revision served (acl-<16 hex>, what OPA configurations pin as signing.keyid); absent when bundles are served unsigned. See condition Signed.',
    ),
  lastSync: Timestamp.optional(),
  agents: z
    .object({
      reporting: z.number().int().min(0).describe('OPA agents that reported their status within --agent-expiry-seconds.'),
      current: z.number().int().min(0).describe('Of those, the ones running the revision served, without errors.'),
      behind: z.number().int().min(0).describe('Running an older revision (or none yet), without errors.'),
      failing: z.number().int().min(0).describe('Whose last download or activation failed, or that load two bundles of acl-operator.'),
      rollout: z.string().describe('current/reporting, e.g. 3/3: the AGENTS column.'),
    })
    .optional()
    .describe('What the OPA agents polling this bundle report (status plugin); see condition RolledOut.'),
  conditions: Conditions.optional(),
});
export type BundleStatus = z.infer<typeof BundleStatus>;

export const Bundle = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Bundle'),
  // Service spec 2.4 and 8: a bundle name is alphanumeric with hyphens; it appears in the URL path.
  metadata: ObjectMeta.extend({ name: DnsLabel }),
  spec: BundleSpec,
  status: BundleStatus.optional(),
});
export type Bundle = z.infer<typeof Bundle>;
