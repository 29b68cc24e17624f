// What makes one object's own spec invalid, worded once: the Ready condition the controllers write
// and the admission webhook's refusal read the same words (test/admission-status.test.ts holds them
// equal). Only the object itself is judged: what other objects say (a Bundle's Connector, two
// Directories listing one entity) is never a problem here, since objects may be applied in any order.
import type { z } from 'zod';
import { Bundle, Connector, describeIssues, Directory, Rule } from '../api/index.ts';
import { ruleModel } from '../policy/index.ts';

/** The kinds whose specs are judged here (and that the webhook reviews). */
export type JudgedKind = 'Rule' | 'Connector' | 'Bundle' | 'Directory';

/**
 * Why a spec is invalid: InvalidSpec (the schema refuses it, or a condition is not CEL) or
 * TranslationFailed (valid CEL outside the subset we translate); `message` is the Ready condition's.
 */
export interface SpecProblem {
  readonly reason: 'InvalidSpec' | 'TranslationFailed';
  readonly message: string;
}

export type SpecCheck<T> = { readonly ok: true; readonly object: T } | { readonly ok: false; readonly problem: SpecProblem };

/** An object read with its kind's schema: the typed object, or its problem as status words it. */
export function checkSpec<S extends z.ZodType>(schema: S, raw: unknown): SpecCheck<z.output<S>> {
  const parsed = schema.safeParse(raw);
  return parsed.success
    ? { ok: true, object: parsed.data }
    : { ok: false, problem: { reason: 'InvalidSpec', message: describeIssues(parsed.error) } };
}

/** A condition that does not compile: text that is not CEL is an invalid spec; CEL outside our subset cannot be translated. */
export function conditionProblem(error: { readonly kind: 'syntax' | 'unsupported'; readonly message: string }): SpecProblem {
  return { reason: error.kind === 'syntax' ? 'InvalidSpec' : 'TranslationFailed', message: error.message };
}

const SCHEMAS: Record<JudgedKind, z.ZodType> = { Rule, Connector, Bundle, Directory };

/** What the object's own spec makes invalid, in the words of its status; undefined when it is valid. */
export function specProblem(kind: JudgedKind, raw: unknown): SpecProblem | undefined {
  if (kind !== 'Rule') {
    const checked = checkSpec(SCHEMAS[kind], raw);
    return checked.ok ? undefined : checked.problem;
  }
  const rule = checkSpec(Rule, raw);
  if (!rule.ok) return rule.problem;
  const model = ruleModel(rule.object);
  return model.ok ? undefined : conditionProblem(model.error);
}
