import { z } from 'zod';
import { API_VERSION, Conditions, DnsSubdomain, ObjectMeta, TypeName } from './meta.ts';

/** Nesting allowed inside one property value (the decision input allows 256 levels in all). */
const MAX_DEPTH = 32;

/** A plain JSON object: what JSON.parse makes (not a Date, Set or byte array a YAML tag can make). */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** What is wrong with a property value as JSON the decision input can carry exactly, or undefined. */
function jsonProblem(v: unknown, depth: number): string | undefined {
  if (depth > MAX_DEPTH) return `nested deeper than ${MAX_DEPTH} levels`;
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return undefined;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return 'numbers must be finite';
    // A larger integer has already lost digits: OPA would compare it with other text than was written.
    if (Number.isInteger(v) && !Number.isSafeInteger(v))
      return 'an integer beyond 2^53 cannot be held exactly (JSON readers round it); write it as a string';
    return undefined;
  }
  if (Array.isArray(v)) {
    for (const x of v) {
      const p = jsonProblem(x, depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  if (isPlainObject(v)) {
    for (const x of Object.values(v)) {
      const p = jsonProblem(x, depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  return `not a JSON value (${typeof v === 'object' ? (v.constructor?.name ?? 'object') : typeof v}; a YAML tag such as !!binary or !!timestamp makes one)`;
}

/**
 * An entity's properties: any JSON object (the CRD keeps it as written). `type` and `id` are not
 * properties: they always come from the entity itself. Checked on the value as given, so that a
 * `__proto__` key is reported rather than dropped.
 */
export const EntityProperties = z
  .unknown()
  .superRefine((props, ctx) => {
    if (!isPlainObject(props)) {
      ctx.addIssue({
        code: 'custom',
        message: `must be an object of properties, got ${Array.isArray(props) ? 'a list' : props === null ? 'null' : typeof props}`,
      });
      return;
    }
    for (const key of ['type', 'id']) {
      if (Object.hasOwn(props, key))
        ctx.addIssue({ code: 'custom', path: [key], message: `"${key}" is not a property: it is the entity's own ${key}` });
    }
    if (Object.hasOwn(props, '__proto__'))
      ctx.addIssue({ code: 'custom', path: ['__proto__'], message: '"__proto__" cannot be a property name' });
    for (const [key, value] of Object.entries(props)) {
      const problem = jsonProblem(value, 1);
      if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
    }
  })
  .transform((props) => props as Record<string, unknown>)
  .meta({ 'x-kubernetes-preserve-unknown-fields': true })
  .describe("Attributes of the entity, as a request would send them in properties; a request's own attributes win over these.");

export const DirectoryEntity = z.strictObject({
  type: TypeName.describe('Entity type, as requests send it (subject.type or resource.type).'),
  id: z
    .string()
    .min(1)
    .max(1024)
    .refine((s) => s.isWellFormed(), 'must be well-formed Unicode (no lone UTF-16 surrogates such as "\\ud800")')
    .describe('Entity id, as requests send it (subject.id or resource.id).'),
  properties: EntityProperties.default({}),
});
export type DirectoryEntity = z.infer<typeof DirectoryEntity>;

/** Entities per Directory: a Kubernetes object stays under about 1.5 MB, so large sets are split over several. */
export const MAX_ENTITIES = 5000;

export const DirectorySpec = z.strictObject({
  description: z.string().max(4096).optional().describe('What these entities are and where they come from.'),
  entities: z
    .array(DirectoryEntity)
    .max(MAX_ENTITIES)
    .default([])
    .superRefine((entities, ctx) => {
      const seen = new Map<string, number>();
      entities.forEach((e, i) => {
        const key = `${e.type}\u0000${e.id}`;
        const first = seen.get(key);
        if (first === undefined) seen.set(key, i);
        else
          ctx.addIssue({ code: 'custom', path: [i], message: `${e.type} ${JSON.stringify(e.id)} is already listed at entities.${first}` });
      });
    })
    .describe('Entities {type, id, properties} whose properties decisions read when a request names them.'),
});
export type DirectorySpec = z.infer<typeof DirectorySpec>;

export const DirectoryPhase = z.enum(['Ready', 'Conflict', 'Invalid']);

export const DirectoryStatus = z.object({
  phase: DirectoryPhase.optional(),
  observedGeneration: z.number().int().min(0).optional(),
  entityCount: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Entities of this Directory in effect (an entity another Directory also lists is not counted).'),
  conditions: Conditions.optional(),
});
export type DirectoryStatus = z.infer<typeof DirectoryStatus>;

export const Directory = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Directory'),
  metadata: ObjectMeta.extend({ name: DnsSubdomain }),
  spec: DirectorySpec,
  status: DirectoryStatus.optional(),
});
export type Directory = z.infer<typeof Directory>;
