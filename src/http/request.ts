// The request shape of POST /authorization (service spec 2.1) and its mapping onto the decision
// input OPA sees: {principal, action, resource, context}. An entity's attributes are its
// `properties` object merged with any other top-level fields (those win), and `type` and `id`
// always come from the entity itself. Unknown fields are kept as attributes, never refused.
import { z } from 'zod';
import { toDecisionInput, type DecisionInput } from '../policy/index.ts';

const JsonObject = z.record(z.string(), z.unknown());

const Entity = z.looseObject({
  type: z.string().min(1, 'must not be empty').max(256),
  id: z.string().min(1, 'must not be empty').max(1024),
  properties: JsonObject.optional(),
});

export const AuthorizationRequest = z.looseObject({
  subject: Entity,
  resource: Entity,
  action: z.string().min(1, 'must not be empty').max(256),
  context: JsonObject.optional(),
});
export type AuthorizationRequest = z.infer<typeof AuthorizationRequest>;

/** "subject.type is required; action: expected string, received number" */
export function describeRequestIssues(error: z.ZodError): string {
  return error.issues.slice(0, 5).map((i) => {
    const path = i.path.map(String).join('.') || 'body';
    if (i.code === 'invalid_type' && /received undefined/.test(i.message)) return `${path} is required`;
    if (i.code === 'invalid_type') {
      const expected = i.expected === 'record' ? 'object' : i.expected;
      return `${path} must be ${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}`;
    }
    return `${path}: ${i.message}`;
  }).join('; ');
}

function attributes(entity: z.infer<typeof Entity>): Record<string, unknown> {
  const { type, id, properties, ...extra } = entity;
  return { ...properties, ...extra, type, id };
}

/** Checks a parsed body and maps it onto a decision input, or says what is wrong. */
export function decisionInputOf(body: unknown): { ok: true; input: DecisionInput } | { ok: false; message: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, message: 'the body must be a JSON object' };
  const parsed = AuthorizationRequest.safeParse(body);
  if (!parsed.success) return { ok: false, message: describeRequestIssues(parsed.error) };
  const { subject, resource, action, context } = parsed.data;
  const input = toDecisionInput({ principal: attributes(subject), action, resource: attributes(resource), context: context ?? {} });
  return typeof input === 'string' ? { ok: false, message: input } : { ok: true, input };
}
