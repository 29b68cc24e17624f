// How things are spelled in Rego: string, number and JSON terms, attribute references, comment
// lines and rule blocks (which differ between Rego v0 and v1). Everything that must be escaped is
// escaped here.
import type { Json, Literal } from './model.ts';
import { codePointCompare } from './values.ts';

export type RegoVersion = 0 | 1;

/** Rego keywords (v0 and v1) that cannot follow a dot in a reference. */
const KEYWORDS = new Set([
  'as',
  'default',
  'else',
  'false',
  'import',
  'package',
  'not',
  'null',
  'some',
  'true',
  'with',
  'every',
  'in',
  'contains',
  'if',
]);

/**
 * A Rego string literal. Rego strings use JSON's escapes, so JSON.stringify is exact and inert; a
 * byte-order mark is escaped too, because OPA's scanner refuses one anywhere but at the file's start.
 */
export function regoString(s: string): string {
  return JSON.stringify(s.isWellFormed() ? s : s.toWellFormed()).replaceAll('\uFEFF', '\\ufeff');
}

function regoNumber(n: number): string {
  if (!Number.isFinite(n)) throw new Error('numbers in Rego must be finite');
  return Object.is(n, -0) ? '0' : String(n);
}

/** A CEL literal (null, string, number, boolean or a list of them) as a Rego term. */
export function regoLiteral(v: Literal): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return regoString(v);
  if (typeof v === 'number') return regoNumber(v);
  if (typeof v === 'boolean') return String(v);
  return `[${v.map(regoLiteral).join(', ')}]`;
}

/** A JSON value as a Rego term: object keys in code point order (the caller sorts Maps). */
export function regoJson(v: Json | ReadonlyMap<string, unknown>): string {
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${regoString(k)}: ${regoJson(x as Json)}`).join(', ')}}`;
  const j = v as Json;
  if (j === null || typeof j !== 'object') return regoLiteral(j);
  if (Array.isArray(j)) return `[${j.map(regoJson).join(', ')}]`;
  const keys = Object.keys(j).sort(codePointCompare);
  return `{${keys.map((k) => `${regoString(k)}: ${regoJson((j as Record<string, Json>)[k] as Json)}`).join(', ')}}`;
}

/**
 * Where a condition reads an attribute. With a directory embedded, principal and resource are the
 * merged documents `acl_principal` and `acl_resource`; everything else reads the input.
 */
export function regoRef(root: string, keys: readonly (string | number)[], merged = false): string {
  let s = merged && (root === 'principal' || root === 'resource') ? `acl_${root}` : `input.${root}`;
  for (const k of keys) {
    if (typeof k === 'number') s += `[${k}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && !KEYWORDS.has(k)) s += `.${k}`;
    else s += `[${regoString(k)}]`;
  }
  return s;
}

/** Removes anything that could end a comment line early, or that OPA's scanner refuses (a byte-order mark). */
function commentText(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what a Rego comment must not hold.
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\uFEFF]/g, ' ').trimEnd();
}

/** Comment lines (`# …`) for text of any number of lines. */
export function commentLines(text: string): string[] {
  return text.split(/\r\n|\r|\n|\u2028|\u2029|\u0085/).map((line) => `# ${commentText(line)}`.trimEnd());
}

/** A rule block, `head { body }` (v0) or `head if { body }` (v1); an empty body holds (`true`). */
export function block(v: RegoVersion, head: string, body: readonly string[]): string {
  const open = v === 1 ? `${head.replace(/ = /, ' := ')} if {` : `${head} {`;
  if (body.length === 0) return `${open}\n\ttrue\n}`;
  return `${open}\n${body.map((s) => `\t${s}`).join('\n')}\n}`;
}
