import type { DecisionInput } from './evaluate.ts';
import type { Json } from './model.ts';
import { normalizeInput } from './normalize.ts';
import { isMap } from './values.ts';

/**
 * Checks and normalizes a decision input document `{principal, action, resource, context?}` as OPA
 * sees it. Returns a message naming the first problem when the document does not have that shape.
 */
export function toDecisionInput(raw: unknown): DecisionInput | string {
  let doc: Json;
  try {
    doc = normalizeInput(raw);
  } catch (err) {
    return `input is not a JSON document: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (!isMap(doc)) return 'input must be an object';
  const { principal, action, resource } = doc;
  // An absent context is an empty one (the translated Rego reads it the same way); null is not.
  const context = doc['context'] === undefined ? {} : doc['context'];
  if (principal === undefined || !isMap(principal)) return 'principal must be an object';
  if (resource === undefined || !isMap(resource)) return 'resource must be an object';
  if (typeof action !== 'string') return 'action must be a string';
  if (!isMap(context)) return 'context must be an object';
  // The same for the action's properties.
  const actionProperties = doc['actionProperties'] === undefined ? {} : doc['actionProperties'];
  if (!isMap(actionProperties)) return 'actionProperties must be an object';
  return { principal, action, resource, context, actionProperties };
}
