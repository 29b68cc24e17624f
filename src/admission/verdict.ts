// The answer to one review. A DELETE, a CONNECT or a write to a subresource (the operator's own status
// writes) always passes; a CREATE or UPDATE is refused with the problem its own spec has, in the words
// of its status, or admitted with warnings (lint findings) short enough for kubectl to print whole.
import { isObject } from '../api/index.ts';
import { canonicalJson } from '../bundle/index.ts';
import { REVIEW_API_VERSION, type Review } from './review.ts';
import { type JudgedKind, type SpecProblem, specProblem } from './spec.ts';

/** An object of a tenant as the webhook hands it to warnings: its kind, key and the object as stored. */
export interface ReviewedObject {
  readonly kind: JudgedKind;
  readonly namespace: string;
  readonly name: string;
  readonly raw: Readonly<Record<string, unknown>>;
}

/**
 * The warnings for `object` among the tenant's `objects` (which hold it in place of its stored
 * version): one short line each.
 */
export type WarningsFor = (object: ReviewedObject, objects: readonly ReviewedObject[]) => readonly string[];

export type Verdict =
  | { readonly allowed: false; readonly problem: SpecProblem }
  /** `object`: the object admitted, when a spec was judged (CREATE, UPDATE); warnings are about it. */
  | { readonly allowed: true; readonly object: ReviewedObject | undefined };

/** The object with the request's namespace when its metadata has none (a CREATE may leave it to the URL). */
function withNamespace(object: Readonly<Record<string, unknown>>, namespace: string | undefined): Readonly<Record<string, unknown>> {
  const metadata = isObject(object['metadata']) ? object['metadata'] : {};
  if (typeof metadata['namespace'] === 'string' || namespace === undefined) return object;
  return { ...object, metadata: { ...metadata, namespace } };
}

/**
 * An UPDATE that leaves the spec as stored (labels, annotations, finalizers), or of an object being
 * deleted, is not judged: refusing it would not make a stored object valid (status says it is
 * Invalid), and would keep tools from labelling it or a finalizer from ever being removed.
 */
function specUntouched(review: Review, raw: Readonly<Record<string, unknown>>): boolean {
  if (review.operation !== 'UPDATE') return false;
  const metadata = isObject(raw['metadata']) ? raw['metadata'] : {};
  if (metadata['deletionTimestamp'] !== undefined) return true;
  return review.oldObject !== undefined && canonicalJson(review.oldObject['spec']) === canonicalJson(raw['spec']);
}

/** Refused with the spec's problem, or admitted; nothing but the object itself is looked at. */
export function verdictOf(review: Review): Verdict {
  if (review.object === undefined || review.subResource !== undefined) return { allowed: true, object: undefined };
  const raw = withNamespace(review.object, review.namespace);
  const problem = specUntouched(review, raw) ? undefined : specProblem(review.kind, raw);
  if (problem) return { allowed: false, problem };
  // A valid spec has passed ObjectMeta: name and namespace are strings.
  const metadata = isObject(raw['metadata']) ? raw['metadata'] : {};
  const { name, namespace } = metadata;
  if (typeof name !== 'string' || typeof namespace !== 'string') return { allowed: true, object: undefined };
  return { allowed: true, object: { kind: review.kind, namespace, name, raw } };
}

/** The tenant's objects with `object` in place of its stored version (or added, for a CREATE). */
export function withIncoming(objects: readonly ReviewedObject[], object: ReviewedObject): ReviewedObject[] {
  const same = (o: ReviewedObject): boolean => o.kind === object.kind && o.namespace === object.namespace && o.name === object.name;
  return [...objects.filter((o) => !same(o)), object];
}

/**
 * Kubernetes asks for warnings of 120 characters "if possible" and may truncate those over 256 (and
 * many of them: their total is capped at 4 KiB). A lint finding with its fix needs about 200, so
 * each is cut at 256, and at most MAX_WARNINGS are sent.
 */
export const MAX_WARNING_CHARS = 256;
export const MAX_WARNINGS = 10;

/** One line of at most MAX_WARNING_CHARS characters: runs of spaces and control characters become one space, a longer one ends in "…". */
function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
  const chars = Array.from(text.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim());
  return chars.length <= MAX_WARNING_CHARS ? chars.join('') : `${chars.slice(0, MAX_WARNING_CHARS - 1).join('')}…`;
}

/** The warnings as sent: each one line within MAX_WARNING_CHARS, at most MAX_WARNINGS (the last then counts the rest). */
export function boundWarnings(warnings: readonly string[]): string[] {
  const lines = warnings.map(oneLine).filter((w) => w !== '');
  if (lines.length <= MAX_WARNINGS) return lines;
  const kept = lines.slice(0, MAX_WARNINGS - 1);
  return [...kept, `and ${lines.length - kept.length} more warnings`];
}

/** The AdmissionReview the API server expects back: the request's uid, allowed, the refusal's status, the warnings. */
export function reviewResponse(uid: string, verdict: Verdict, warnings: readonly string[]): Record<string, unknown> {
  return {
    apiVersion: REVIEW_API_VERSION,
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: verdict.allowed,
      // 422 as for any invalid object; kubectl prints `admission webhook "..." denied the request: <message>`.
      ...(verdict.allowed ? {} : { status: { code: 422, reason: 'Invalid', message: verdict.problem.message } }),
      ...(warnings.length > 0 ? { warnings } : {}),
    },
  };
}
