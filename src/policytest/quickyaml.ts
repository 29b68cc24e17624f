// A reader for the plain subset of YAML that test files are written in, used before the yaml package:
// that package reads about 1.7 MB a second here (10,000 cases took over a second, most of the run),
// this reader some 50 times that. The subset: one document whose top is a block mapping; block
// mappings and sequences; flow mappings and sequences on one line; plain and quoted scalars on one
// line; comments. Anything else (anchors, tags, block scalars, multi-line scalars or flow, tabs, a
// number written other than plainly, duplicate keys, ...) returns undefined, and the caller parses
// the text with the yaml package, which also words every error. So this reader never reports an
// error and never reads a text differently: test/policytest/quickyaml.test.ts compares it with the
// yaml package on generated and mutated texts.

/** What the reader found: the value, and where each item of each sequence starts (its content's offset). */
export interface QuickRead {
  readonly value: Record<string, unknown>;
  readonly itemOffsets: WeakMap<readonly unknown[], readonly number[]>;
}

/** Thrown inside the reader when the text leaves the subset; caught by quickRead alone. */
const OUTSIDE: unique symbol = Symbol('outside the subset');

/** Characters whose handling differs between YAML readers, or that this one does not need to handle. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what sends a text to the yaml package.
const AWKWARD = /[\t\r\0-\x08\x0b-\x1f\x7f-\x9f\ufeff\ufffe\uffff\u2028\u2029]/;
/** Characters that cannot start a plain scalar (YAML's indicators). */
const INDICATORS = new Set('-?:,[]{}#&*!|>\'"%@`');
const FLOW_END = new Set(',[]{}');
const SIMPLE_NUMBER = /^(?:0|-?[1-9][0-9]{0,14})(?:\.[0-9]+)?$/;
/** Plain scalars YAML 1.2's core schema reads as numbers in a way not worth repeating here. */
const OTHER_NUMBER =
  /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const ESCAPES: Record<string, string> = { '\\': '\\', '"': '"', '/': '/', n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };

function outside(): never {
  throw OUTSIDE;
}

/** A plain scalar's value under YAML 1.2's core schema (the yaml package's default). */
function plainValue(text: string): unknown {
  switch (text) {
    case 'null':
    case 'Null':
    case 'NULL':
    case '~':
      return null;
    case 'true':
    case 'True':
    case 'TRUE':
      return true;
    case 'false':
    case 'False':
    case 'FALSE':
      return false;
  }
  if (SIMPLE_NUMBER.test(text)) return Number(text);
  if (OTHER_NUMBER.test(text)) outside();
  return text;
}

/** A key: a string that YAML reads as a string, and not one that objects treat specially. */
function keyText(text: string, quoted: boolean): string {
  if (!quoted && typeof plainValue(text) !== 'string') outside();
  if (text === '__proto__' || text === '<<') outside();
  return text;
}

/** Reads `text`; undefined when it leaves the subset (then read it with the yaml package). */
export function quickRead(text: string): QuickRead | undefined {
  if (AWKWARD.test(text)) return undefined;
  const itemOffsets = new WeakMap<readonly unknown[], readonly number[]>();
  try {
    return { value: documentOf({ s: text, n: text.length, pos: 0, itemOffsets }), itemOffsets };
  } catch (err) {
    if (err === OUTSIDE) return undefined;
    throw err;
  }
}

interface Line {
  /** Offset of the line's first character. */
  readonly start: number;
  readonly indent: number;
}

/** The text being read, and the start of the first line not consumed yet. */
interface Reader {
  readonly s: string;
  readonly n: number;
  pos: number;
  readonly itemOffsets: WeakMap<readonly unknown[], readonly number[]>;
}

function lineEnd(r: Reader, p: number): number {
  const e = r.s.indexOf('\n', p);
  return e < 0 ? r.n : e;
}

function spaces(r: Reader, p: number): number {
  while (r.s.charCodeAt(p) === 32) p++;
  return p;
}

/** Whether the line's content ends at p: nothing, or a comment (a `#` after a space). */
function endsAt(r: Reader, p: number): boolean {
  return p >= r.n || r.s[p] === '\n' || (r.s[p] === '#' && r.s[p - 1] === ' ');
}

/** The next line holding content (blank and comment lines skipped), without consuming it. */
function peek(r: Reader): Line | undefined {
  let p = r.pos;
  while (p < r.n) {
    const c = spaces(r, p);
    if (c < r.n && r.s[c] !== '\n' && r.s[c] !== '#') return { start: p, indent: c - p };
    p = lineEnd(r, c) + 1;
  }
  return undefined;
}

/** Consumes the rest of the line from p: only spaces and a comment may be left. */
function finishLine(r: Reader, p: number): void {
  const q = spaces(r, p);
  if (!endsAt(r, q)) outside();
  r.pos = lineEnd(r, q) + 1;
}

function isItem(r: Reader, p: number): boolean {
  return r.s[p] === '-' && (p + 1 >= r.n || r.s[p + 1] === ' ' || r.s[p + 1] === '\n');
}

/** A quoted scalar on one line: `'...'` (with `''`) or `"..."` with the escapes JSON has. */
function quoted(r: Reader, p: number): { value: string; end: number } {
  const { s, n } = r;
  const q = s[p];
  let out = '';
  let i = p + 1;
  for (;;) {
    if (i >= n || s[i] === '\n') outside();
    const c = s[i] as string;
    if (c === q) {
      if (q === "'" && s[i + 1] === "'") {
        out += "'";
        i += 2;
        continue;
      }
      return { value: out, end: i + 1 };
    }
    if (c === '\\' && q === '"') {
      const e = s[i + 1] ?? '';
      const simple = ESCAPES[e];
      if (simple !== undefined) {
        out += simple;
        i += 2;
        continue;
      }
      const hex = e === 'u' ? s.slice(i + 2, i + 6) : '';
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) outside();
      const code = Number.parseInt(hex, 16);
      if (code >= 0xd800 && code <= 0xdfff) outside();
      out += String.fromCharCode(code);
      i += 6;
      continue;
    }
    out += c;
    i++;
  }
}

/** A plain scalar's text from p, in block (to the line's end) or flow context; bounds checked by the caller. */
function plainText(r: Reader, p: number, flow: boolean): { text: string; end: number } {
  const { s, n } = r;
  const c = s[p] as string;
  if (INDICATORS.has(c) && !(c === '-' && /[0-9]/.test(s[p + 1] ?? ''))) outside();
  let i = p;
  for (; i < n; i++) {
    const ch = s[i] as string;
    if (ch === '\n') break;
    if (ch === '#' && s[i - 1] === ' ') break;
    if (ch === ':' && (i + 1 >= n || s[i + 1] === ' ' || s[i + 1] === '\n' || (flow && FLOW_END.has(s[i + 1] as string)))) break;
    if (flow && FLOW_END.has(ch)) break;
  }
  return { text: s.slice(p, i).trimEnd(), end: i };
}

function flowValue(r: Reader, p: number): { value: unknown; end: number } {
  const c = r.s[p];
  if (c === '{') return flowMap(r, p);
  if (c === '[') return flowSeq(r, p);
  if (c === '"' || c === "'") return quoted(r, p);
  const { text, end } = plainText(r, p, true);
  if (text === '') outside();
  return { value: plainValue(text), end };
}

function flowKey(r: Reader, p: number): { key: string; end: number } {
  const c = r.s[p];
  if (c === '"' || c === "'") {
    const q = quoted(r, p);
    return { key: keyText(q.value, true), end: q.end };
  }
  const { text, end } = plainText(r, p, true);
  if (text === '') outside();
  return { key: keyText(text, false), end };
}

function flowMap(r: Reader, p: number): { value: Record<string, unknown>; end: number } {
  const { s } = r;
  const out: Record<string, unknown> = {};
  let i = spaces(r, p + 1);
  if (s[i] === '}') return { value: out, end: i + 1 };
  for (;;) {
    const k = flowKey(r, i);
    i = spaces(r, k.end);
    if (s[i] !== ':') outside();
    if (Object.hasOwn(out, k.key)) outside();
    i = spaces(r, i + 1);
    if (s[i] === ',' || s[i] === '}') out[k.key] = null;
    else {
      const v = flowValue(r, i);
      out[k.key] = v.value;
      i = spaces(r, v.end);
    }
    if (s[i] === '}') return { value: out, end: i + 1 };
    if (s[i] !== ',') outside();
    i = spaces(r, i + 1);
  }
}

function flowSeq(r: Reader, p: number): { value: unknown[]; end: number } {
  const { s } = r;
  const out: unknown[] = [];
  const offsets: number[] = [];
  r.itemOffsets.set(out, offsets);
  let i = spaces(r, p + 1);
  if (s[i] === ']') return { value: out, end: i + 1 };
  for (;;) {
    offsets.push(i);
    const v = flowValue(r, i);
    out.push(v.value);
    i = spaces(r, v.end);
    if (s[i] === ']') return { value: out, end: i + 1 };
    if (s[i] !== ',') outside();
    i = spaces(r, i + 1);
  }
}

/**
 * A value written on its line (a flow collection, a quoted or a plain scalar); consumes the line.
 * A deeper line after it (a multi-line scalar, or an error) is refused by the mapping or sequence loop.
 */
function inlineValue(r: Reader, p: number): unknown {
  let value: unknown;
  let end: number;
  const c = r.s[p];
  if (c === '{' || c === '[' || c === '"' || c === "'") ({ value, end } = flowValue(r, p));
  else {
    const plain = plainText(r, p, false);
    value = plainValue(plain.text);
    end = plain.end;
  }
  finishLine(r, end);
  return value;
}

/** The key of a block mapping entry at p, and where its value starts; undefined when p holds no key. */
function blockKey(r: Reader, p: number): { key: string; after: number } | undefined {
  const { s, n } = r;
  const c = s[p] as string;
  let text: string;
  let i: number;
  if (c === '"' || c === "'") {
    const q = quoted(r, p);
    if (s[q.end] !== ':') return undefined;
    text = keyText(q.value, true);
    i = q.end;
  } else {
    if (INDICATORS.has(c)) return undefined;
    for (i = p; i < n && s[i] !== '\n'; i++) {
      const ch = s[i] as string;
      if (ch === '#' && s[i - 1] === ' ') return undefined;
      if (ch === ':' && (i + 1 >= n || s[i + 1] === ' ' || s[i + 1] === '\n')) break;
    }
    if (s[i] !== ':') return undefined;
    text = keyText(s.slice(p, i).trimEnd(), false);
  }
  if (s[i] !== ':' || !(i + 1 >= n || s[i + 1] === ' ' || s[i + 1] === '\n')) outside();
  return { key: text, after: i + 1 };
}

/** A node that starts on a line of its own, deeper than its parent. */
function blockNode(r: Reader, line: Line): unknown {
  const p = line.start + line.indent;
  if (isItem(r, p)) return blockSeq(r, line.indent, p);
  if (blockKey(r, p) !== undefined) return blockMap(r, line.indent, p);
  return outside();
}

/** The value after `key:` with nothing else on the line: a deeper node, a sequence at the key's indent, or null. */
function nestedValue(r: Reader, indent: number): unknown {
  const next = peek(r);
  if (next === undefined) return null;
  if (next.indent > indent) return blockNode(r, next);
  if (next.indent === indent && isItem(r, next.start + next.indent)) return blockSeq(r, indent, next.start + next.indent);
  return null;
}

function blockMap(r: Reader, indent: number, first: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let p = first;
  for (;;) {
    const k = blockKey(r, p);
    if (k === undefined || Object.hasOwn(out, k.key)) outside();
    const v = spaces(r, k.after);
    if (endsAt(r, v)) {
      r.pos = lineEnd(r, v) + 1;
      out[k.key] = nestedValue(r, indent);
    } else out[k.key] = inlineValue(r, v);
    const next = peek(r);
    if (next === undefined || next.indent < indent) return out;
    if (next.indent > indent) outside();
    p = next.start + next.indent;
    // A sequence at the indent of a key belongs to that key (nestedValue took it); another is an error.
    if (isItem(r, p)) return out;
  }
}

/** One item of a block sequence, from its `-` at p. */
function blockItem(r: Reader, indent: number, p: number, offsets: number[]): unknown {
  const v = spaces(r, p + 1);
  if (endsAt(r, v)) {
    r.pos = lineEnd(r, v) + 1;
    const next = peek(r);
    if (next !== undefined && next.indent > indent) {
      offsets.push(next.start + next.indent);
      return blockNode(r, next);
    }
    offsets.push(p);
    return null;
  }
  offsets.push(v);
  const column = v - (r.s.lastIndexOf('\n', v - 1) + 1);
  if (isItem(r, v)) return blockSeq(r, column, v);
  if (blockKey(r, v) !== undefined) return blockMap(r, column, v);
  return inlineValue(r, v);
}

function blockSeq(r: Reader, indent: number, first: number): unknown[] {
  const out: unknown[] = [];
  const offsets: number[] = [];
  r.itemOffsets.set(out, offsets);
  let p = first;
  for (;;) {
    out.push(blockItem(r, indent, p, offsets));
    const next = peek(r);
    if (next === undefined || next.indent < indent) return out;
    if (next.indent > indent) outside();
    p = next.start + next.indent;
    if (!isItem(r, p)) return out;
  }
}

/** The whole text: an optional `---` line, then a block mapping at column 0 and nothing after it. */
function documentOf(r: Reader): Record<string, unknown> {
  let first = peek(r);
  if (first === undefined) return outside();
  const p = first.start + first.indent;
  if (first.indent === 0 && r.s.startsWith('---', p) && endsAt(r, spaces(r, p + 3))) {
    finishLine(r, p + 3);
    first = peek(r);
    if (first === undefined) return outside();
  }
  if (first.indent !== 0) outside();
  const value = blockMap(r, 0, first.start);
  if (peek(r) !== undefined) outside();
  return value;
}
