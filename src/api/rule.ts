import { z } from 'zod';
import { API_VERSION, Conditions, DnsSubdomain, ObjectMeta, Timestamp, TypeName } from './meta.ts';

/** Lifecycle states a person sets in `spec.state` (service spec 3.1). */
export const RuleState = z
  .enum(['Draft', 'Proposed', 'Approved', 'Enforced', 'Suspended', 'Archived'])
  .describe('Draft | Proposed | Approved | Enforced | Suspended | Archived. Only Enforced rules decide; Approved means "deploy it".');
export type RuleState = z.infer<typeof RuleState>;

/** Phases shown in status: the states, plus Invalid for a spec that does not compile. */
export const RulePhase = z.enum(['Draft', 'Proposed', 'Approved', 'Enforced', 'Suspended', 'Archived', 'Invalid']);
export type RulePhase = z.infer<typeof RulePhase>;

export const RuleSpec = z.strictObject({
  description: z.string().max(4096).optional().describe('What the rule means, in a sentence; copied into the Rego as a comment.'),
  state: RuleState.default('Draft'),
  subjectType: TypeName.describe('The principal type the rule applies to (exact match on principal.type).'),
  actions: z
    .array(TypeName)
    .min(1)
    .max(64)
    .refine((a) => new Set(a).size === a.length, 'actions must not repeat')
    .meta({ 'x-kubernetes-list-type': 'set' })
    .describe('Actions the rule allows (exact match on action).'),
  resourceType: TypeName.describe('The resource type the rule applies to (exact match on resource.type).'),
  condition: z
    .string()
    .min(1)
    .max(8192)
    .optional()
    .describe('Optional CEL condition over principal.*, resource.*, context.* and action; see docs/rules.md.'),
});
export type RuleSpec = z.infer<typeof RuleSpec>;

export const TranslationStatus = z.enum(['Current', 'Stale', 'Error']);

const Count = z.number().int().min(0);

/** Shadow decisions of a Proposed rule, or of an Enforced rule marked for removal (docs/rules.md, "Shadow decisions"). */
export const RuleShadowStatus = z.object({
  role: z.enum(['Proposed', 'Removal']).describe('Proposed: would it allow what is denied? Removal: would its going deny what is allowed?'),
  summary: z.string().max(200).describe('One line for kubectl get rules, e.g. "would allow 12 of 3,400".'),
  observedGeneration: Count.optional().describe('The generation whose spec was counted: counts start again when the spec changes.'),
  since: Timestamp.optional().describe('When counting began for this spec and role.'),
  evaluated: Count.describe('Live decisions whose subject type, action and resource type the rule covers.'),
  matched: Count.describe('Of those, how many its condition was true for.'),
  flips: Count.describe('Decisions it would have changed: deny to allow (Proposed) or allow to deny (Removal).'),
  firstTime: Timestamp.optional(),
  lastTime: Timestamp.optional(),
  lastFlipTime: Timestamp.optional(),
  examples: z
    .array(z.object({ time: Timestamp, input: z.string().max(1024).describe('The decision input, redacted, as JSON text.') }))
    .max(3)
    .optional()
    .describe('The first decisions it would have changed.'),
  replicas: z
    .array(z.object({ session: z.string().max(128), evaluated: Count, matched: Count, flips: Count }))
    .max(64)
    .optional()
    .describe(
      'Bookkeeping: each replica session (and run of its count) with its counts when last summed; the totals include what each added since, so a session is counted once.',
    ),
});
export type RuleShadowStatus = z.infer<typeof RuleShadowStatus>;

export const RuleStatus = z.object({
  phase: RulePhase.optional(),
  observedGeneration: z.number().int().min(0).optional(),
  conditions: Conditions.optional(),
  translation: z
    .object({
      status: TranslationStatus,
      generation: z.number().int().min(0).optional(),
      rego: z.string().optional(),
      message: z.string().optional(),
      regenerate: z.string().optional().describe('The acl.policyagent.dev/regenerate annotation value this translation was made for.'),
      spec: RuleSpec.optional().describe('The spec this translation was made from: what stays in force while a newer spec is invalid.'),
    })
    .optional(),
  shadow: RuleShadowStatus.optional(),
});
export type RuleStatus = z.infer<typeof RuleStatus>;

export const Rule = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Rule'),
  metadata: ObjectMeta.extend({ name: DnsSubdomain }),
  spec: RuleSpec,
  status: RuleStatus.optional(),
});
export type Rule = z.infer<typeof Rule>;
