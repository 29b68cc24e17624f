// A console action's changes written into a manifest file's text as the smallest text edits: an
// existing value's token replaced, or a missing key inserted into its mapping (block or flow) in the
// file's own indentation and line endings. Every byte outside those edits stays as it was: comments,
// key order, quoting, blank lines and the other documents. The yaml package's Document API finds the
// nodes and their ranges, and decides what the document must mean afterwards; a re-parse of the
// result is checked against that meaning before anything is written.
import { isDeepStrictEqual } from 'node:util';
import { type Document, isAlias, isMap, isScalar, isSeq, type Node, parseAllDocuments, type Scalar, type YAMLMap } from 'yaml';
import { API_VERSION } from '../api/index.ts';
import { fieldName, type FieldChange, type ObjectKey, withChanges } from '../controller/index.ts';

/** The edited text and the document (1-based) that held the object, or why the file was not edited. */
export type TextEditResult =
  | { readonly ok: true; readonly text: string; readonly document: number }
  | { readonly ok: false; readonly status: 409 | 422; readonly message: string };

type Refusal = Extract<TextEditResult, { ok: false }>;

interface TextEdit {
  readonly at: number;
  readonly end: number;
  readonly insert: string;
}

const PARSE = { uniqueKeys: true, prettyErrors: true } as const;

function refuse(status: 409 | 422, message: string): Refusal {
  return { ok: false, status, message };
}

function parse(text: string): Document.Parsed[] {
  const docs = parseAllDocuments(text, PARSE);
  return Array.isArray(docs) ? docs : [];
}

/** Whether document `doc` is the object of `key` (the folder source's rules: default namespace `default`). */
function holds(doc: Document.Parsed, key: ObjectKey): boolean {
  const js = (path: string[]): unknown => doc.getIn(path, false);
  const apiVersion = key.kind === 'Secret' ? 'v1' : API_VERSION;
  const namespace = js(['metadata', 'namespace']) ?? 'default';
  return (
    js(['apiVersion']) === apiVersion && js(['kind']) === key.kind && js(['metadata', 'name']) === key.name && namespace === key.namespace
  );
}

/**
 * Writes `changes` into the document of `text` that holds `key` (document `hint`, 1-based, when it
 * still does; otherwise the first that does). `source` names the file in messages.
 */
export function editManifestText(
  text: string,
  source: string,
  key: ObjectKey,
  changes: readonly FieldChange[],
  hint: number,
): TextEditResult {
  const docs = parse(text);
  const broken = docs.flatMap((d) => d.errors);
  if (broken.length > 0) {
    const e = broken[0];
    const at = e?.linePos?.[0];
    const where = at ? `line ${at.line}, column ${at.col}: ` : '';
    return refuse(422, `${source} has YAML errors (${where}${e?.message.split('\n')[0]}); fix the file first.`);
  }
  const index = docs[hint - 1] && holds(docs[hint - 1] as Document.Parsed, key) ? hint - 1 : docs.findIndex((d) => holds(d, key));
  const target = docs[index];
  if (!target)
    return refuse(409, `${source} no longer holds ${key.kind} ${key.namespace}/${key.name}: the file changed since it was read.`);
  let edited = text;
  for (const change of changes) {
    const doc = parse(edited)[index] as Document.Parsed;
    const edit = planChange(edited, doc, change);
    if ('status' in edit) return { ...edit, message: `${source}, document ${index + 1}: ${edit.message}` };
    edited = edited.slice(0, edit.at) + edit.insert + edited.slice(edit.end);
  }
  const problem = checkResult(text, edited, docs, index, withChanges(target.toJS() as Record<string, unknown>, changes));
  if (problem) return refuse(422, `${source}, document ${index + 1} cannot be edited safely (${problem}); make the change by hand.`);
  return { ok: true, text: edited, document: index + 1 };
}

/** Why the edited text is not what it must be: the other documents and the object's meaning are compared. */
function checkResult(before: string, after: string, docsBefore: Document.Parsed[], index: number, expected: unknown): string | undefined {
  const docs = parse(after);
  if (docs.some((d) => d.errors.length > 0)) return 'the edit would break the YAML';
  if (docs.length !== docsBefore.length) return 'the edit would change the number of documents';
  for (const [i, d] of docs.entries()) {
    const want = i === index ? expected : docsBefore[i]?.toJS();
    if (!isDeepStrictEqual(d.toJS(), want))
      return i === index ? 'the edited document would not mean what was asked' : 'another document would change';
  }
  const range = docsBefore[index]?.range ?? [0, 0, 0];
  const tail = before.length - range[2];
  if (after.slice(0, range[0]) !== before.slice(0, range[0]) || after.slice(after.length - tail) !== before.slice(range[2]))
    return 'the edit would reach outside its document';
  return undefined;
}

/** The one text edit that sets `change.path` to `change.value` in `doc`. */
function planChange(text: string, doc: Document.Parsed, change: FieldChange): TextEdit | Refusal {
  const name = fieldName(change);
  let node: Node | null | undefined = doc.contents;
  for (const [depth, step] of change.path.entries()) {
    const unsafe = unsafeNode(node, change.path.slice(0, depth));
    if (unsafe) return refuse(422, `cannot set ${name}: ${unsafe}`);
    if (!isMap(node)) {
      if (isScalar(node) && node.value === null && depth > 0) return createAt(text, doc, node, change.path.slice(depth), change.value);
      return refuse(422, `cannot set ${name}: ${change.path.slice(0, depth).join('.') || 'the document'} is not a mapping`);
    }
    const pair = node.items.find((p) => isScalar(p.key) && p.key.value === step);
    if (!pair) return insertInto(text, doc, node, change.path.slice(depth), change.value);
    node = pair.value as Node | null;
  }
  const unsafe = unsafeNode(node, change.path);
  if (unsafe) return refuse(422, `cannot set ${name}: ${unsafe}`);
  if (!isScalar(node) || !node.range)
    return refuse(422, `cannot set ${name}: it holds ${isSeq(node) ? 'a list' : isMap(node) ? 'a mapping' : 'no value to replace'}`);
  return replaceScalar(text, node, change.value);
}

/** Why a node on an edit's path cannot be edited without changing something else. */
function unsafeNode(node: Node | null | undefined, path: readonly string[]): string | undefined {
  const what = path.length === 0 ? 'the document' : path.join('.');
  if (isAlias(node)) return `${what} is an alias (*${node.source}) of another node, which the edit would change too`;
  if (node?.anchor) return `${what} carries an anchor (&${node.anchor}) that aliases elsewhere repeat`;
  if (isScalar(node) && node.tag) return `${what} carries an explicit tag (${node.tag})`;
  return undefined;
}

/** A value's existing token (and a block scalar's lines) replaced by the new value, in the old quoting where it was a quoted string. */
function replaceScalar(text: string, node: Scalar, value: FieldChange['value']): TextEdit {
  const [start, end] = node.range ?? [0, 0];
  const block = node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED';
  const rendered = renderValue(value, node.type);
  if (start === end) return { at: start, end, insert: ` ${rendered}` };
  // A block scalar's range ends after its last line break.
  return { at: start, end, insert: block ? `${rendered}${lineEnding(text)}` : rendered };
}

/** `value` as a YAML scalar: numbers and booleans plain; strings in the style they had when quoted, else double quotes. */
function renderValue(value: FieldChange['value'], style?: Scalar['type']): string {
  if (typeof value !== 'string') return String(value);
  if (style === 'QUOTE_SINGLE') return `'${value.replaceAll("'", "''")}'`;
  return JSON.stringify(value);
}

const PLAIN_KEY = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
/** Words a YAML 1.1 reader (kubectl's) would not read as a string. */
const RESERVED = /^(?:y|n|yes|no|on|off|true|false|null)$/i;

function renderKey(key: string): string {
  return PLAIN_KEY.test(key) && !RESERVED.test(key) ? key : JSON.stringify(key);
}

/** `a: {b: value}` for keys [a, b]. */
function flowText(keys: readonly string[], value: FieldChange['value'], pad = ''): string {
  const [first, ...rest] = keys;
  return `${renderKey(first as string)}: ${rest.length === 0 ? renderValue(value) : `{${pad}${flowText(rest, value, pad)}${pad}}`}`;
}

/** The lines of keys [a, b] = value in block style from column `col`, each ended by `eol`. */
function blockLines(keys: readonly string[], value: FieldChange['value'], col: number, step: number, eol: string): string {
  return keys
    .map((k, i) => `${' '.repeat(col + i * step)}${renderKey(k)}:${i === keys.length - 1 ? ` ${renderValue(value)}` : ''}${eol}`)
    .join('');
}

/** A missing key (and any missing mappings under it) added at the end of `map`. */
function insertInto(text: string, doc: Document.Parsed, map: YAMLMap, keys: readonly string[], value: FieldChange['value']): TextEdit {
  const [start, end] = map.range ?? [0, 0];
  if (map.flow) {
    const last = map.items.at(-1);
    const after = last ? ((last.value as Node | null)?.range?.[1] ?? (last.key as Node).range?.[1]) : undefined;
    return after === undefined
      ? { at: start + 1, end: start + 1, insert: flowText(keys, value) }
      : { at: after, end: after, insert: `, ${flowText(keys, value, text[start + 1] === ' ' ? ' ' : '')}` };
  }
  const eol = lineEnding(text);
  // A block mapping's range ends after the line break of its last line (or at the end of the file).
  const lead = end > 0 && text[end - 1] !== '\n' ? eol : '';
  return { at: end, end, insert: lead + blockLines(keys, value, columnOf(text, start), indentStep(text, doc), eol) };
}

/** A mapping created where the document has an empty value (`spec:` with nothing after it). */
function createAt(
  text: string,
  doc: Document.Parsed,
  empty: Scalar,
  keys: readonly string[],
  value: FieldChange['value'],
): TextEdit | Refusal {
  const owner = doc.contents;
  const parent = isMap(owner) ? findParent(owner, empty) : undefined;
  if (!parent || !empty.range) return refuse(422, `cannot set ${keys.join('.')}: its place holds null`);
  // `spec:`, `spec: null` or `spec: ~`: the token (and the spaces before it) give way to the mapping.
  let [at, end] = empty.range;
  if (parent.flow) return { at, end, insert: `{${flowText(keys, value)}}` };
  if (at === end && text[at] === '#') {
    // `spec: # comment`: the comment stays on its line, the mapping starts on the next.
    const eolAt = text.indexOf('\n', at);
    at = end = eolAt === -1 ? text.length : text[eolAt - 1] === '\r' ? eolAt - 1 : eolAt;
  } else while (at > 0 && text[at - 1] === ' ') at--;
  const eol = lineEnding(text);
  const step = indentStep(text, doc);
  const lines = blockLines(keys, value, columnOf(text, parent.range?.[0] ?? 0) + step, step, eol);
  return { at, end, insert: eol + lines.slice(0, -eol.length) };
}

/** The mapping whose value `child` is. */
function findParent(map: YAMLMap, child: Node): YAMLMap | undefined {
  for (const p of map.items) {
    if (p.value === child) return map;
    if (isMap(p.value)) {
      const found = findParent(p.value, child);
      if (found) return found;
    }
  }
  return undefined;
}

function lineEnding(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

function columnOf(text: string, at: number): number {
  const lineStart = text.lastIndexOf('\n', at - 1) + 1;
  // A byte order mark at the start of the file takes no column.
  return at - lineStart - (lineStart === 0 && text.startsWith('\uFEFF') && at > 0 ? 1 : 0);
}

/** How far the document indents a block mapping under its key (2 when it nests none). */
function indentStep(text: string, doc: Document.Parsed): number {
  const visit = (map: YAMLMap): number | undefined => {
    for (const p of map.items) {
      if (!isMap(p.value)) continue;
      const child = p.value;
      const step = !child.flow && !map.flow ? columnOf(text, child.range?.[0] ?? 0) - columnOf(text, map.range?.[0] ?? 0) : 0;
      if (step > 0) return step;
      const deeper = visit(child);
      if (deeper) return deeper;
    }
    return undefined;
  };
  return (isMap(doc.contents) ? visit(doc.contents) : undefined) ?? 2;
}
