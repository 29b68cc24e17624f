// The one check every edge makes before a schema or a hand-written parser reads a JSON value's fields.

/** True for a JSON object (what `JSON.parse` or a YAML mapping gives): not null, not an array. */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
