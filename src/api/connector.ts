import { z } from 'zod';
import { API_VERSION, Conditions, DnsLabel, ObjectMeta, Timestamp } from './meta.ts';

export const ConnectorSpec = z.strictObject({
  displayName: z.string().max(256).optional().describe('Operator-chosen display name.'),
  active: z.boolean().default(true).describe('false: Inactive, the bundle endpoint answers 403.'),
  tokenRotation: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe('Raise it to rotate the token: a new token is issued and the old one is invalid at once.'),
  revoked: z.boolean().default(false).describe('true: the token is invalid (401 for every poller) and the connector Inactive.'),
});
export type ConnectorSpec = z.infer<typeof ConnectorSpec>;

export const ConnectorStatus = z.object({
  phase: z.enum(['Active', 'Inactive', 'Invalid']).optional(),
  observedGeneration: z.number().int().min(0).optional(),
  tokenSecretName: z.string().optional(),
  tokenIssuedAt: Timestamp.optional(),
  bundles: z.array(z.string()).optional(),
  conditions: Conditions.optional(),
});
export type ConnectorStatus = z.infer<typeof ConnectorStatus>;

export const Connector = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Connector'),
  // The connector id appears in the bundle URL path.
  metadata: ObjectMeta.extend({ name: DnsLabel }),
  spec: ConnectorSpec,
  status: ConnectorStatus.optional(),
});
export type Connector = z.infer<typeof Connector>;
