// Condition templates: a condition with its plain string literals taken out. Tenants write many
// conditions that differ only in a string (`principal.id != "alice"`, `... "bob"`), and parsing CEL
// costs about 170 µs each, so cel.ts parses a template once and fills in each condition's strings.
// Only what cannot change the parse is taken out: a string in double or single quotes without escapes
// or line breaks. Anything else (raw, bytes or triple-quoted strings, comments, backticks) is left to
// the whole parse, as are the blocks of cidr(...), whose text decides whether the condition is valid.
import type { Cond, Literal, Value } from './model.ts';

/** A condition as its template: the template's text (the cache key) and the strings taken out, in order. */
export interface Template {
  readonly key: string;
  readonly strings: readonly string[];
}

const DQUOTE = 0x22;
const SQUOTE = 0x27;
const BACKSLASH = 0x5c;
const SLASH = 0x2f;
const BACKTICK = 0x60;
const LF = 0x0a;
const CR = 0x0d;

/** The placeholder of the n-th string: not an identifier (so never a field name) and never a CIDR block. */
function placeholder(n: number): string {
  return `#${n}`;
}
const PLACEHOLDER = /^#(\d+)$/;

function isIdentifierCode(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

/** Whether the string starting at `quote` is the block of `cidr(...)`, whose text is kept in the template. */
function isCidrBlock(text: string, quote: number): boolean {
  return /\bcidr\s*\(\s*$/.test(text.slice(Math.max(0, quote - 40), quote));
}

/**
 * The template of a condition, or undefined when it has no string to take out or holds something the
 * template scanner does not read (then the caller parses the text whole).
 */
export function templateOf(text: string): Template | undefined {
  const strings: string[] = [];
  let key = '';
  let copied = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKTICK || (c === SLASH && text.charCodeAt(i + 1) === SLASH)) return undefined;
    if (c !== DQUOTE && c !== SQUOTE) continue;
    // r"…", b"…": a prefix letter makes it another kind of literal; """…""" spans lines.
    if (i > 0 && isIdentifierCode(text.charCodeAt(i - 1))) return undefined;
    if (text.charCodeAt(i + 1) === c && text.charCodeAt(i + 2) === c) return undefined;
    let end = i + 1;
    for (; end < text.length; end++) {
      const d = text.charCodeAt(end);
      if (d === c) break;
      if (d === BACKSLASH || d === LF || d === CR) return undefined;
    }
    if (end >= text.length) return undefined;
    if (!isCidrBlock(text, i)) {
      key += `${text.slice(copied, i)}"${placeholder(strings.length)}"`;
      strings.push(text.slice(i + 1, end));
      copied = end + 1;
    }
    i = end;
  }
  if (strings.length === 0) return undefined;
  return { key: key + text.slice(copied), strings };
}

/** A string of the template's compiled condition, with a placeholder replaced by its string (as the parser reads it). */
function filled(s: string, strings: readonly string[]): string {
  const m = PLACEHOLDER.exec(s);
  if (!m) return s;
  const value = strings[Number(m[1])] as string;
  return value.isWellFormed() ? value : value.toWellFormed();
}

function fillLiteral(l: Literal, strings: readonly string[]): Literal {
  if (typeof l === 'string') return filled(l, strings);
  if (Array.isArray(l)) return l.map((x: Literal) => fillLiteral(x, strings));
  return l;
}

function fillValue(v: Value, strings: readonly string[]): Value {
  switch (v.kind) {
    case 'literal':
      return { kind: 'literal', value: fillLiteral(v.value, strings) };
    case 'path':
      return { kind: 'path', root: v.root, keys: v.keys.map((k) => (typeof k === 'string' ? filled(k, strings) : k)) };
    case 'size':
      return { kind: 'size', arg: fillValue(v.arg, strings) };
    case 'time':
      return { kind: 'time', part: v.part, arg: fillValue(v.arg, strings) };
  }
}

/** The template's compiled condition with its placeholders replaced by `strings`: the condition's own. */
export function fillTemplate(c: Cond, strings: readonly string[]): Cond {
  switch (c.kind) {
    case 'const':
      return c;
    case 'and':
    case 'or':
      return { kind: c.kind, left: fillTemplate(c.left, strings), right: fillTemplate(c.right, strings) };
    case 'not':
      return { kind: 'not', operand: fillTemplate(c.operand, strings) };
    case 'bool':
      return { kind: 'bool', value: fillValue(c.value, strings) };
    case 'compare':
      return { kind: 'compare', op: c.op, left: fillValue(c.left, strings), right: fillValue(c.right, strings) };
    case 'in':
      return { kind: 'in', element: fillValue(c.element, strings), collection: fillValue(c.collection, strings) };
    case 'string':
      return { kind: 'string', fn: c.fn, target: fillValue(c.target, strings), arg: fillValue(c.arg, strings) };
    case 'cidr':
      return { kind: 'cidr', cidr: c.cidr, address: fillValue(c.address, strings) };
  }
}
