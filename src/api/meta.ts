import { z } from 'zod';

/** API group and version of every kind we own. */
export const GROUP = 'acl.policyagent.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** A DNS-1123 label: namespaces (tenants) and bundle names, which both appear in URLs. */
export const DnsLabel = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be lowercase letters, digits and hyphens, starting and ending with a letter or digit');

/** A DNS-1123 subdomain: the names Kubernetes allows for most objects. */
export const DnsSubdomain = z
  .string()
  .min(1)
  .max(253)
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    'must be lowercase letters, digits, hyphens and dots, starting and ending with a letter or digit',
  );

/**
 * An entity type or action name as it appears in requests (`user`, `service_account`, `read`).
 * Matching is exact and case-sensitive, so no whitespace is allowed.
 */
export const TypeName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:/-]*$/, 'must be letters, digits, "_", ".", ":", "/" or "-", with no spaces');

/** An RFC 3339 timestamp written by the operator. */
export const Timestamp = z.string().meta({ format: 'date-time' });

/** Kubernetes object metadata: the fields we read. Everything else is kept as the server sent it. */
export const ObjectMeta = z.looseObject({
  name: DnsSubdomain,
  namespace: DnsLabel,
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMeta>;

/** A status condition with Kubernetes conventions (metav1.Condition). */
export const Condition = z.object({
  type: z.string().min(1).max(316),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().max(1024).optional(),
  message: z.string().max(32768).optional(),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: Timestamp.optional(),
});
export type Condition = z.infer<typeof Condition>;

/** Conditions as a list keyed by `type`, the way Kubernetes merges them. */
export const Conditions = z.array(Condition).meta({
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

/**
 * Conditions as read back: each one that is a Condition, in order and as written (an entry carried
 * over keeps its bytes); an odd one is left out, not the whole list.
 */
const RecordedConditions = z
  .array(z.unknown())
  .transform((items) => items.filter((item): item is Condition => Condition.safeParse(item).success));

/** Any object's fields; made once (building a zod schema per read was most of a Rule reconcile's status read). */
const StatusFields = z.record(z.string(), z.unknown());

/**
 * A status as an earlier write left it, read field by field with its kind's schema: a field that
 * does not parse (hand-edited, or written by an older version) is absent and never hides the others.
 */
export function readStatus<S extends z.ZodObject>(schema: S, raw: unknown): Partial<z.output<S>> {
  const fields = StatusFields.safeParse(raw);
  if (!fields.success) return {};
  const read = Object.entries(schema.shape).flatMap(([name, field]: [string, z.ZodType]) => {
    // Conditions merge by type, so each stands alone: one odd entry keeps the others' transition times.
    const value = (name === 'conditions' ? RecordedConditions : field).safeParse(fields.data[name]);
    return value.success && value.data !== undefined ? [[name, value.data]] : [];
  });
  // The entries are the schema's own fields, each parsed by that field's schema.
  return Object.fromEntries(read) as Partial<z.output<S>>;
}
