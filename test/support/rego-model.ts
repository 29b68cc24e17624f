// An independent model of OPA's semantics for the small Rego subset that src/policy/rego*.ts emit.
//
// There is no OPA binary in CI, yet the product's core invariant is that OPA running our generated
// Rego decides exactly like the native evaluator. This module reads the *printed text* of a policy
// (tokenizer, parser, a few of the compiler's static checks) and evaluates it with OPA's rules:
// undefined instead of errors, `not` as negation-as-failure (with the compiler hoisting call
// arguments out of the negation), OPA's total order over values, and the builtins the prelude uses
// (is_*, count, startswith, endswith, contains, regex.match, net.cidr_contains, object.get,
// time.parse_rfc3339_ns, time.clock, time.weekday), written here from Go's and OPA's behaviour.
// For the entity directory it also knows constant (multi-line) object rules, partial object rules
// `p[k] = v { ... }` (their full extent, `{}` when no body holds, OPA's conflict error for two values
// of one key) and the one form of reference iteration they use, `x := a[k]` with k unbound.
//
// It deliberately imports nothing from src/: sharing code with the evaluator would defeat the point.
// Anything outside the subset (a keyword, an operator, a builtin, a regex construct, a statement form
// it does not know) is a RegoModelError at load time, so the translator cannot silently start
// emitting something this model would misjudge.

// ---------------------------------------------------------------------------------------------
// Values

/** A set value (only set literals of the v1 `x in {...}` form create one). Items are sorted and distinct. */
export class RegoSet {
  readonly items: readonly Value[];
  constructor(items: readonly Value[]) {
    const sorted = [...items].sort(compareValues);
    this.items = sorted.filter((v, i) => i === 0 || compareValues(sorted[i - 1] as Value, v) !== 0);
  }
}

export interface ValueObject {
  readonly [key: string]: Value;
}

/** A Rego value. Numbers are JS numbers, except the exact int64 nanoseconds of the time builtins (bigint). */
export type Value = null | boolean | number | bigint | string | readonly Value[] | RegoSet | ValueObject;

export class RegoModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegoModelError';
  }
}

function isArray(v: Value): v is readonly Value[] {
  return Array.isArray(v);
}

function isObject(v: Value): v is ValueObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof RegoSet);
}

function isNumber(v: Value): v is number | bigint {
  return typeof v === 'number' || typeof v === 'bigint';
}

/** OPA's sort order of types (ast/compare.go): null < boolean < number < string < array < object < set. */
function typeRank(v: Value): number {
  if (v === null) return 0;
  if (typeof v === 'boolean') return 1;
  if (isNumber(v)) return 2;
  if (typeof v === 'string') return 3;
  if (isArray(v)) return 6;
  if (v instanceof RegoSet) return 8;
  return 7;
}

/** Strings order by their UTF-8 bytes in Go, which is code point order (not UTF-16 unit order). */
function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  return Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function sortedKeys(o: ValueObject): string[] {
  return Object.keys(o).sort(compareStrings);
}

/** OPA's total order over values (ast.Compare); `==` is `compare(a, b) == 0`. */
export function compareValues(a: Value, b: Value): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0:
      return 0;
    case 1:
      return a === b ? 0 : a === false ? -1 : 1;
    case 2: {
      const x = a as number | bigint;
      const y = b as number | bigint;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 3:
      return compareStrings(a as string, b as string);
    case 6:
      return compareSlices(a as readonly Value[], b as readonly Value[]);
    case 8:
      return compareSlices((a as RegoSet).items, (b as RegoSet).items);
    default: {
      const oa = a as ValueObject;
      const ob = b as ValueObject;
      const ka = sortedKeys(oa);
      const kb = sortedKeys(ob);
      const n = Math.min(ka.length, kb.length);
      for (let i = 0; i < n; i++) {
        const kc = compareStrings(ka[i] as string, kb[i] as string);
        if (kc !== 0) return kc;
        const vc = compareValues(oa[ka[i] as string] as Value, ob[kb[i] as string] as Value);
        if (vc !== 0) return vc;
      }
      return ka.length === kb.length ? 0 : ka.length < kb.length ? -1 : 1;
    }
  }
}

function compareSlices(a: readonly Value[], b: readonly Value[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compareValues(a[i] as Value, b[i] as Value);
    if (c !== 0) return c;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Documents already checked by jsonValue (inputs are reused across many queries in the tests). */
const checkedDocuments = new WeakSet<object>();

/** Checks that a decision input is a JSON document and returns it as a Value (no copy). */
function jsonValue(v: unknown, path: string): Value {
  if (typeof v === 'object' && v !== null && checkedDocuments.has(v)) return v as Value;
  const out = checkJson(v, path);
  if (typeof v === 'object' && v !== null) checkedDocuments.add(v);
  return out;
}

function checkJson(v: unknown, path: string): Value {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      if (!Number.isFinite(v)) throw new RegoModelError(`input ${path} is not a finite number`);
      return v;
    case 'object': {
      if (v === null) return null;
      if (Array.isArray(v)) {
        v.forEach((x: unknown, i) => {
          checkJson(x, `${path}[${i}]`);
        });
        return v as readonly Value[];
      }
      for (const [k, x] of Object.entries(v)) checkJson(x, `${path}.${k}`);
      return v as ValueObject;
    }
    default:
      throw new RegoModelError(`input ${path} is not JSON (${typeof v})`);
  }
}

// ---------------------------------------------------------------------------------------------
// Tokens

type TokKind = 'id' | 'str' | 'num' | 'op' | 'nl' | 'eof';

interface Tok {
  readonly k: TokKind;
  /** Source text of the token (for strings and numbers: the decoded value is in `value`). */
  readonly v: string;
  readonly value?: string | number;
  readonly line: number;
  readonly start: number;
  readonly end: number;
}

const TWO_CHAR_OPS = [':=', '==', '!=', '<=', '>='];
const ONE_CHAR_OPS = '<>={}[](),.:';
const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const IDENT_RE = /[A-Za-z_][A-Za-z0-9_]*/y;

function tokenize(text: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  let line = 1;
  const fail = (msg: string): never => {
    throw new RegoModelError(`line ${line}: ${msg}`);
  };
  // OPA's scanner refuses a byte-order mark anywhere but at the very start, even in strings and comments.
  const bom = text.indexOf('\uFEFF', 1);
  if (bom >= 0) {
    line = text.slice(0, bom).split('\n').length;
    fail('illegal byte-order mark');
  }
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '\n') {
      out.push({ k: 'nl', v: '\n', line, start: i, end: i + 1 });
      i++;
      line++;
      continue;
    }
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') {
        if (text[j] === '\n') fail('newline inside a string literal');
        j += text[j] === '\\' ? 2 : 1;
      }
      if (j >= text.length) fail('unterminated string literal');
      const src = text.slice(i, j + 1);
      let value: unknown;
      try {
        value = JSON.parse(src);
      } catch {
        fail(`invalid string literal ${src}`);
      }
      out.push({ k: 'str', v: src, value: value as string, line, start: i, end: j + 1 });
      i = j + 1;
      continue;
    }
    if (c === '`') {
      const j = text.indexOf('`', i + 1);
      if (j < 0) fail('unterminated raw string');
      const value = text.slice(i + 1, j);
      out.push({ k: 'str', v: text.slice(i, j + 1), value, line, start: i, end: j + 1 });
      line += value.split('\n').length - 1;
      i = j + 1;
      continue;
    }
    if (/[0-9]/.test(c) || (c === '-' && /[0-9]/.test(text[i + 1] ?? ''))) {
      NUMBER_RE.lastIndex = i;
      const m = NUMBER_RE.exec(text);
      if (!m) fail('bad number');
      const src = (m as RegExpExecArray)[0];
      if (/[A-Za-z0-9_.]/.test(text[i + src.length] ?? '')) fail(`bad number literal near ${text.slice(i, i + src.length + 1)}`);
      const value = Number(src);
      if (!Number.isFinite(value)) fail(`number ${src} is out of the modelled range`);
      if (/^-?[0-9]+$/.test(src) && !Number.isSafeInteger(value))
        fail(`integer ${src} is beyond 2^53: OPA keeps it exact, this model cannot`);
      out.push({ k: 'num', v: src, value, line, start: i, end: i + src.length });
      i += src.length;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      IDENT_RE.lastIndex = i;
      const src = (IDENT_RE.exec(text) as RegExpExecArray)[0];
      out.push({ k: 'id', v: src, line, start: i, end: i + src.length });
      i += src.length;
      continue;
    }
    const two = text.slice(i, i + 2);
    if (TWO_CHAR_OPS.includes(two)) {
      out.push({ k: 'op', v: two, line, start: i, end: i + 2 });
      i += 2;
      continue;
    }
    if (ONE_CHAR_OPS.includes(c)) {
      out.push({ k: 'op', v: c, line, start: i, end: i + 1 });
      i++;
      continue;
    }
    fail(`unexpected character ${JSON.stringify(c)}`);
  }
  out.push({ k: 'eof', v: '', line, start: text.length, end: text.length });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

export type Term =
  | { readonly t: 'scalar'; readonly v: null | boolean | number | string }
  | { readonly t: 'array'; readonly items: readonly Term[] }
  | { readonly t: 'object'; readonly entries: readonly (readonly [string, Term])[] }
  | { readonly t: 'set'; readonly items: readonly Term[] }
  | { readonly t: 'var'; readonly name: string }
  | { readonly t: 'wildcard' }
  /** `head.a[k][_]`: head is a var (input, a rule, a local) or an array literal. */
  | { readonly t: 'ref'; readonly head: Term; readonly path: readonly Term[] }
  | { readonly t: 'call'; readonly fn: string; readonly args: readonly Term[] };

type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

export type Stmt =
  | { readonly s: 'term'; readonly term: Term; readonly line: number }
  | { readonly s: 'cmp'; readonly op: CompareOp; readonly l: Term; readonly r: Term; readonly line: number }
  | { readonly s: 'assign'; readonly name: string; readonly value: Term; readonly line: number }
  /** `_ = x`: succeeds iff x is defined. */
  | { readonly s: 'defined'; readonly value: Term; readonly line: number }
  /** v1 `x in c` */
  | { readonly s: 'in'; readonly l: Term; readonly r: Term; readonly line: number }
  /** `not inner`; `hoisted` are the terms OPA's compiler evaluates before (outside) the negation. */
  | { readonly s: 'not'; readonly inner: Stmt; readonly hoisted: readonly Term[]; readonly line: number };

interface RuleDef {
  readonly name: string;
  /** Present for functions. */
  readonly args: readonly string[] | undefined;
  /**
   * Present for partial object rules, `name[k] = v { ... }` (v0) or `name[k] := v if { ... }` (v1):
   * the key term (only a variable is modelled). OPA calls these multi-value object rules.
   */
  readonly key: Term | undefined;
  /** The head value (`= v`); undefined means `true`. */
  readonly value: Term | undefined;
  /** undefined: no body (a constant). */
  readonly body: readonly Stmt[] | undefined;
  readonly line: number;
}

const CMP_OPS: readonly string[] = ['==', '!=', '<', '<=', '>', '>='];
/** Words that can never be a variable or rule name in the subset (both versions). */
const RESERVED = new Set(['not', 'some', 'every', 'with', 'else', 'as', 'default', 'package', 'import', 'data']);
/** Keywords that cannot follow a dot in a reference (src/policy/regotext.ts brackets these). */
const DOT_KEYWORDS = new Set([
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

class Parser {
  private pos = 0;
  private nest = 0;
  version: 0 | 1 = 0;
  packagePath = '';
  readonly rules: RuleDef[] = [];
  readonly defaults: { name: string; value: Term; line: number }[] = [];

  private readonly toks: readonly Tok[];

  constructor(toks: readonly Tok[]) {
    this.toks = toks;
  }

  private fail(msg: string, tok: Tok = this.peekRaw()): never {
    throw new RegoModelError(`line ${tok.line}: ${msg} (at ${tok.k === 'eof' ? 'end of input' : JSON.stringify(tok.v)})`);
  }

  private peekRaw(): Tok {
    return this.toks[this.pos] as Tok;
  }

  /** The next token; inside brackets and literals newlines are insignificant. */
  private peek(): Tok {
    if (this.nest > 0) while ((this.toks[this.pos] as Tok).k === 'nl') this.pos++;
    return this.toks[this.pos] as Tok;
  }

  private next(): Tok {
    const t = this.peek();
    this.pos++;
    return t;
  }

  private isOp(v: string, t: Tok = this.peek()): boolean {
    return t.k === 'op' && t.v === v;
  }

  private isId(v: string, t: Tok = this.peek()): boolean {
    return t.k === 'id' && t.v === v;
  }

  private expectOp(v: string): Tok {
    if (!this.isOp(v)) this.fail(`expected ${JSON.stringify(v)}`);
    return this.next();
  }

  private skipNewlines(): void {
    while (this.peekRaw().k === 'nl') this.pos++;
  }

  private endOfLine(): void {
    const t = this.peekRaw();
    if (t.k !== 'nl' && t.k !== 'eof') this.fail('expected the end of the line');
  }

  /** True when the token follows the previous one with no space (refs and calls must be written so). */
  private adjacent(t: Tok): boolean {
    const prev = this.toks[this.pos - 1];
    return prev !== undefined && prev.end === t.start;
  }

  parseModule(): void {
    this.skipNewlines();
    if (!this.isId('package')) this.fail('a module starts with `package`');
    this.next();
    const parts = [this.identifier()];
    while (this.isOp('.') && this.adjacent(this.peek())) {
      this.next();
      parts.push(this.identifier());
    }
    this.packagePath = parts.join('.');
    this.endOfLine();
    this.skipNewlines();
    while (this.isId('import')) {
      this.next();
      const ip = [this.identifier()];
      while (this.isOp('.')) {
        this.next();
        ip.push(this.identifier());
      }
      const path = ip.join('.');
      if (path !== 'rego.v1') this.fail(`import ${path} is not modelled (only rego.v1)`);
      if (this.version === 1) this.fail('duplicate import rego.v1');
      this.version = 1;
      this.endOfLine();
      this.skipNewlines();
    }
    while (this.peekRaw().k !== 'eof') {
      this.parseRule();
      this.endOfLine();
      this.skipNewlines();
    }
  }

  private identifier(): string {
    const t = this.next();
    if (t.k !== 'id') this.fail('expected an identifier', t);
    return t.v;
  }

  private ruleName(): string {
    const t = this.peek();
    const name = this.identifier();
    if (RESERVED.has(name) || ['true', 'false', 'null', 'input', '_'].includes(name) || this.isKeyword(name))
      this.fail(`${name} cannot name a rule`, t);
    return name;
  }

  private isKeyword(name: string): boolean {
    return this.version === 1 && (name === 'if' || name === 'in' || name === 'contains');
  }

  private parseRule(): void {
    const first = this.peek();
    if (this.isId('default')) {
      this.next();
      const name = this.ruleName();
      if (!this.isOp('=') && !this.isOp(':=')) this.fail('expected = or := after default');
      this.next();
      this.defaults.push({ name, value: this.parseTerm(), line: first.line });
      return;
    }
    const name = this.ruleName();
    let args: string[] | undefined;
    if (this.isOp('(') && this.adjacent(this.peek())) {
      this.next();
      this.nest++;
      args = [];
      if (!this.isOp(')')) {
        for (;;) {
          const t = this.peek();
          const a = this.identifier();
          if (RESERVED.has(a) || a === '_' || a === 'input' || ['true', 'false', 'null'].includes(a) || this.isKeyword(a))
            this.fail(`${a} is not modelled as a function argument`, t);
          if (args.includes(a)) this.fail(`duplicate argument ${a}`, t);
          args.push(a);
          if (this.isOp(',')) {
            this.next();
            continue;
          }
          break;
        }
      }
      this.nest--;
      this.expectOp(')');
    }
    let key: Term | undefined;
    if (args === undefined && this.isOp('[') && this.adjacent(this.peek())) {
      // A partial object rule `name[k] = v`: the key must be a variable the body binds.
      this.next();
      this.nest++;
      const t = this.peek();
      key = this.parseTerm();
      if (key.t !== 'var') this.fail('only a variable is modelled as the key of a partial object rule', t);
      this.nest--;
      this.expectOp(']');
      if (this.isOp('[') && this.adjacent(this.peek())) this.fail('nested rule head references are not modelled');
      if (!this.isOp('=') && !this.isOp(':='))
        this.fail('partial set rules (`name[x] { ... }`) are not modelled; a partial object rule needs `= value`');
    }
    let value: Term | undefined;
    if (this.isOp('=') || this.isOp(':=')) {
      this.next();
      value = this.parseTerm();
    }
    let hasIf = false;
    if (this.isId('if')) {
      if (this.version === 0) this.fail('`if` is not a keyword in Rego v0 without an import');
      this.next();
      hasIf = true;
    }
    let body: Stmt[] | undefined;
    if (this.isOp('{')) {
      if (this.version === 1 && !hasIf) this.fail('Rego v1 requires `if` before a rule body');
      body = this.parseBody();
      if (this.isOp('{') || this.isId('else')) this.fail('multiple bodies and else are not modelled');
    } else if (hasIf) {
      this.fail('only `if { ... }` bodies are modelled');
    }
    if (body === undefined && value === undefined) this.fail(`rule ${name} has neither a value nor a body`);
    if (body === undefined && args !== undefined) this.fail(`function ${name} has no body`);
    if (body === undefined && key !== undefined) this.fail(`partial object rule ${name} has no body`);
    this.rules.push({ name, args, key, value, body, line: first.line });
  }

  private parseBody(): Stmt[] {
    this.expectOp('{');
    const out: Stmt[] = [];
    for (;;) {
      this.skipNewlines();
      if (this.isOp('}')) {
        this.next();
        break;
      }
      out.push(this.parseStatement());
      const t = this.peekRaw();
      if (t.k !== 'nl' && !this.isOp('}', t)) this.fail('expected the end of the statement');
    }
    if (out.length === 0) this.fail('empty body');
    return out;
  }

  private parseStatement(): Stmt {
    const line = this.peek().line;
    if (this.isId('not')) {
      this.next();
      if (this.isId('not')) this.fail('double negation is not modelled');
      const inner = this.parseExpr();
      if (inner.s === 'assign' || inner.s === 'defined') this.fail('cannot assign inside a negated expression');
      if (inner.s === 'in') this.fail('`not x in c` is not modelled');
      return { s: 'not', inner, hoisted: hoistedTerms(inner), line };
    }
    return this.parseExpr();
  }

  private parseExpr(): Stmt {
    const line = this.peek().line;
    const l = this.parseTerm();
    const t = this.peek();
    if (t.k === 'op' && CMP_OPS.includes(t.v)) {
      this.next();
      const r = this.parseTerm();
      if (l.t === 'wildcard' || r.t === 'wildcard') this.fail('`_` cannot be compared');
      return { s: 'cmp', op: t.v as CompareOp, l, r, line };
    }
    if (this.isOp(':=')) {
      this.next();
      if (l.t !== 'var') this.fail('only `var := term` assignments are modelled', t);
      return { s: 'assign', name: l.name, value: this.parseTerm(), line };
    }
    if (this.isOp('=')) {
      this.next();
      if (l.t !== 'wildcard') this.fail('unification other than `_ = term` is not modelled', t);
      return { s: 'defined', value: this.parseTerm(), line };
    }
    if (this.isId('in')) {
      if (this.version === 0) this.fail('`in` is not a keyword in Rego v0 without an import');
      this.next();
      return { s: 'in', l, r: this.parseTerm(), line };
    }
    if (l.t === 'wildcard') this.fail('`_` alone is not a statement');
    return { s: 'term', term: l, line };
  }

  private parseTerm(): Term {
    const t = this.peek();
    if (t.k === 'str') {
      this.next();
      return this.postfix({ t: 'scalar', v: t.value as string }, false);
    }
    if (t.k === 'num') {
      this.next();
      return { t: 'scalar', v: t.value as number };
    }
    if (this.isOp('[')) {
      this.next();
      this.nest++;
      const items = this.parseItems(']');
      this.nest--;
      this.expectOp(']');
      return this.postfix({ t: 'array', items }, true);
    }
    if (this.isOp('{')) {
      this.next();
      this.nest++;
      let out: Term;
      if (this.isOp('}')) {
        out = { t: 'object', entries: [] };
      } else {
        const first = this.parseTerm();
        if (this.isOp(':')) {
          const entries: [string, Term][] = [];
          let key = first;
          for (;;) {
            this.expectOp(':');
            if (key.t !== 'scalar' || typeof key.v !== 'string') this.fail('only string keys are modelled in object literals');
            const name = key.v;
            if (entries.some(([k]) => k === name)) this.fail(`duplicate key ${JSON.stringify(name)}`);
            entries.push([name, this.parseTerm()]);
            if (!this.isOp(',')) break;
            this.next();
            key = this.parseTerm();
          }
          out = { t: 'object', entries };
        } else {
          const items = [first];
          while (this.isOp(',')) {
            this.next();
            items.push(this.parseTerm());
          }
          out = { t: 'set', items };
        }
      }
      this.nest--;
      this.expectOp('}');
      return out;
    }
    if (t.k === 'id') {
      this.next();
      if (t.v === 'true' || t.v === 'false') return { t: 'scalar', v: t.v === 'true' };
      if (t.v === 'null') return { t: 'scalar', v: null };
      if (t.v === '_') return { t: 'wildcard' };
      if (RESERVED.has(t.v) || (this.isKeyword(t.v) && !(t.v === 'contains' && this.isOp('('))))
        this.fail(`keyword ${t.v} is not modelled here`, t);
      return this.postfix({ t: 'var', name: t.v }, true);
    }
    return this.fail('expected a term');
  }

  private parseItems(close: string): Term[] {
    const items: Term[] = [];
    if (this.isOp(close)) return items;
    for (;;) {
      items.push(this.parseTerm());
      if (!this.isOp(',')) return items;
      this.next();
      if (this.isOp(close)) this.fail('trailing commas are not modelled');
    }
  }

  /** `.key`, `[term]` and, for a dotted name, a call `(args)`; all written without spaces. */
  private postfix(head: Term, refable: boolean): Term {
    const path: Term[] = [];
    let dotted = head.t === 'var';
    const names = head.t === 'var' ? [head.name] : [];
    for (;;) {
      const t = this.peekRaw();
      if (!this.adjacent(t)) break;
      if (this.isOp('.', t) && refable) {
        this.next();
        const k = this.peekRaw();
        const key = this.identifier();
        if (DOT_KEYWORDS.has(key)) this.fail(`keyword ${key} after a dot`, k);
        path.push({ t: 'scalar', v: key });
        names.push(key);
        continue;
      }
      if (this.isOp('[', t) && refable) {
        this.next();
        this.nest++;
        const index = this.parseTerm();
        this.nest--;
        this.expectOp(']');
        path.push(index);
        dotted = false;
        continue;
      }
      if (this.isOp('(', t) && head.t === 'var') {
        if (!dotted) this.fail('a call must be a (dotted) name');
        this.next();
        this.nest++;
        const args = this.parseItems(')');
        this.nest--;
        this.expectOp(')');
        const after = this.peekRaw();
        if (this.adjacent(after) && (this.isOp('.', after) || this.isOp('[', after) || this.isOp('(', after)))
          this.fail('refs into call results are not modelled');
        return { t: 'call', fn: names.join('.'), args };
      }
      break;
    }
    if (path.length === 0) return head;
    if (head.t === 'scalar') this.fail('a string cannot be indexed');
    return { t: 'ref', head, path };
  }
}

/**
 * The terms OPA's compiler moves out of a negated expression (evaluated before it, so when one of
 * them is undefined the whole `not` statement fails): every nested call (expandExpr, see OPA issue
 * #7558), the non-constant arguments of a negated call (rewriteDynamics, OPA issue #1877) and the
 * dynamic keys of a negated reference (OPA issue #4743). Operands of a negated comparison are not
 * moved: `not input.x == 1` is true when input.x is missing (see the Rego style guide discussion).
 * Listed innermost first.
 */
function hoistedTerms(inner: Stmt): Term[] {
  const out: Term[] = [];
  const nestedCalls = (t: Term): void => {
    switch (t.t) {
      case 'call':
        t.args.forEach(nestedCalls);
        out.push(t);
        return;
      case 'ref':
        nestedCalls(t.head);
        t.path.forEach(nestedCalls);
        return;
      case 'array':
      case 'set':
        t.items.forEach(nestedCalls);
        return;
      case 'object':
        t.entries.forEach(([, v]) => {
          nestedCalls(v);
        });
        return;
      default:
        return;
    }
  };
  const dynamic = (t: Term): void => {
    switch (t.t) {
      // A var is a local (always defined: hoisting changes nothing), input, or a rule (a ref to data).
      case 'var':
        out.push(t);
        return;
      case 'ref':
        if (t.head.t === 'var') t.path.forEach(dynamic);
        out.push(t);
        return;
      case 'array':
      case 'set':
        t.items.forEach(dynamic);
        return;
      case 'object':
        t.entries.forEach(([, v]) => {
          dynamic(v);
        });
        return;
      case 'call':
        nestedCalls(t);
        return;
      default:
        return;
    }
  };
  switch (inner.s) {
    case 'term': {
      const t = inner.term;
      if (t.t === 'call') {
        t.args.forEach(dynamic);
      } else if (t.t === 'ref') {
        nestedCalls(t.head);
        t.path.forEach((p) => {
          p.t === 'ref' || p.t === 'call' ? dynamic(p) : nestedCalls(p);
        });
      } else nestedCalls(t);
      break;
    }
    case 'cmp':
      nestedCalls(inner.l);
      nestedCalls(inner.r);
      break;
    default:
      throw new RegoModelError(`line ${inner.line}: negation of this statement is not modelled`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Builtins: OPA's, re-implemented from Go's rules. `undefined` is an error, which (with OPA's default
// non-strict builtin errors) makes the call undefined.

type Builtin = (args: readonly Value[]) => Value | undefined;

function utf8(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

const BUILTINS: ReadonlyMap<string, { arity: number; fn: Builtin }> = new Map<string, { arity: number; fn: Builtin }>([
  ['is_number', { arity: 1, fn: ([x]) => isNumber(x as Value) }],
  ['is_string', { arity: 1, fn: ([x]) => typeof x === 'string' }],
  ['is_boolean', { arity: 1, fn: ([x]) => typeof x === 'boolean' }],
  ['is_array', { arity: 1, fn: ([x]) => isArray(x as Value) }],
  ['is_object', { arity: 1, fn: ([x]) => isObject(x as Value) }],
  [
    'count',
    {
      arity: 1,
      fn: ([x]) => {
        const v = x as Value;
        if (typeof v === 'string') return Array.from(v).length; // runes
        if (isArray(v)) return v.length;
        if (v instanceof RegoSet) return v.items.length;
        if (isObject(v)) return Object.keys(v).length;
        return undefined;
      },
    },
  ],
  [
    'startswith',
    {
      arity: 2,
      fn: ([s, p]) => (typeof s === 'string' && typeof p === 'string' ? utf8(s).subarray(0, utf8(p).length).equals(utf8(p)) : undefined),
    },
  ],
  [
    'endswith',
    {
      arity: 2,
      fn: ([s, p]) => {
        if (typeof s !== 'string' || typeof p !== 'string') return undefined;
        const b = utf8(s);
        const q = utf8(p);
        return q.length <= b.length && b.subarray(b.length - q.length).equals(q);
      },
    },
  ],
  ['contains', { arity: 2, fn: ([s, p]) => (typeof s === 'string' && typeof p === 'string' ? utf8(s).includes(utf8(p)) : undefined) }],
  ['regex.match', { arity: 2, fn: ([p, s]) => (typeof p === 'string' && typeof s === 'string' ? re2Subset(p).test(s) : undefined) }],
  ['net.cidr_contains', { arity: 2, fn: ([c, x]) => (typeof c === 'string' && typeof x === 'string' ? cidrContains(c, x) : undefined) }],
  [
    'object.get',
    {
      arity: 3,
      fn: ([o, k, d]) => {
        if (!isObject(o as Value)) return undefined;
        const found = lookup(o as Value, k as Value);
        return found === undefined ? (d as Value) : found;
      },
    },
  ],
  ['time.parse_rfc3339_ns', { arity: 1, fn: ([s]) => (typeof s === 'string' ? parseRfc3339Ns(s) : undefined) }],
  [
    'time.clock',
    {
      arity: 1,
      fn: ([n]) => {
        const ns = exactNs(n as Value);
        if (ns === undefined) return undefined;
        const secOfDay = Number(floorMod(floorDiv(ns, 1_000_000_000n), 86_400n));
        return [Math.floor(secOfDay / 3600), Math.floor(secOfDay / 60) % 60, secOfDay % 60];
      },
    },
  ],
  [
    'time.weekday',
    {
      arity: 1,
      fn: ([n]) => {
        const ns = exactNs(n as Value);
        if (ns === undefined) return undefined;
        const days = floorDiv(floorDiv(ns, 1_000_000_000n), 86_400n);
        // 1970-01-01 was a Thursday.
        return ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'][Number(floorMod(days + 4n, 7n))] as string;
      },
    },
  ],
]);

const regexCache = new Map<string, RegExp>();

/**
 * RE2 and JavaScript agree on a small core: anchors, literal ASCII, escaped dots, character classes
 * of ASCII characters, groups, alternation and the quantifiers ? + * {n} {n,m}. Anything else
 * (unescaped `.`, `\d`, flags, lookaround, non-ASCII) is rejected rather than guessed.
 */
function re2Subset(pattern: string): RegExp {
  const cached = regexCache.get(pattern);
  if (cached) return cached;
  if (!/^(?:[A-Za-z0-9^$()[\]|?+*{},:\- ]|\\\.)*$/.test(pattern) || pattern.includes('(?')) {
    throw new RegoModelError(`regex ${JSON.stringify(pattern)} uses syntax outside the modelled RE2 subset`);
  }
  let re: RegExp;
  try {
    re = new RegExp(pattern);
  } catch {
    throw new RegoModelError(`regex ${JSON.stringify(pattern)} does not compile`);
  }
  regexCache.set(pattern, re);
  return re;
}

// --- net.cidr_contains, after Go's net/netip parsers and net.IPNet.Contains.

/** netip.ParseAddr: a 16-byte address, whether it was written as IPv4, and its zone. */
function parseAddr(s: string): { bytes: Uint8Array; is4: boolean; zone: string } | undefined {
  for (const ch of s) {
    if (ch === '.') {
      const b = parseIpv4Fields(s);
      if (!b) return undefined;
      const out = new Uint8Array(16);
      out[10] = 0xff;
      out[11] = 0xff;
      out.set(b, 12);
      return { bytes: out, is4: true, zone: '' };
    }
    if (ch === ':') return parseIpv6(s);
    if (ch === '%') return undefined;
  }
  return undefined;
}

function parseIpv4Fields(s: string): Uint8Array | undefined {
  const fields = new Uint8Array(4);
  let val = 0;
  let pos = 0;
  let digits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c >= '0' && c <= '9') {
      if (digits === 1 && val === 0) return undefined; // leading zero
      val = val * 10 + Number(c);
      digits++;
      if (val > 255) return undefined;
    } else if (c === '.') {
      if (i === 0 || i === s.length - 1 || s[i - 1] === '.') return undefined;
      if (pos === 3) return undefined;
      fields[pos++] = val;
      val = 0;
      digits = 0;
    } else {
      return undefined;
    }
  }
  if (pos < 3) return undefined;
  fields[3] = val;
  return fields;
}

function parseIpv6(input: string): { bytes: Uint8Array; is4: boolean; zone: string } | undefined {
  let s = input;
  let zone = '';
  const pct = s.indexOf('%');
  if (pct >= 0) {
    zone = s.slice(pct + 1);
    s = s.slice(0, pct);
    if (zone === '') return undefined;
  }
  const ip = new Uint8Array(16);
  let ellipsis = -1;
  if (s.startsWith('::')) {
    ellipsis = 0;
    s = s.slice(2);
    if (s === '') return { bytes: ip, is4: false, zone };
  }
  let i = 0;
  while (i < 16) {
    let off = 0;
    let acc = 0;
    for (; off < s.length; off++) {
      const c = s[off] as string;
      const d = /[0-9a-fA-F]/.test(c) ? parseInt(c, 16) : -1;
      if (d < 0) break;
      acc = acc * 16 + d;
      if (off > 3) return undefined; // more than 4 digits
      if (acc > 0xffff) return undefined;
    }
    if (off === 0) return undefined;
    if (off < s.length && s[off] === '.') {
      if (ellipsis < 0 && i !== 12) return undefined;
      if (i + 4 > 16) return undefined;
      const v4 = parseIpv4Fields(s);
      if (!v4) return undefined;
      ip.set(v4, i);
      s = '';
      i += 4;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s === '') break;
    if (s[0] !== ':' || s.length === 1) return undefined;
    s = s.slice(1);
    if (s[0] === ':') {
      if (ellipsis >= 0) return undefined;
      ellipsis = i;
      s = s.slice(1);
      if (s === '') break;
    }
  }
  if (s !== '') return undefined;
  if (i < 16) {
    if (ellipsis < 0) return undefined;
    const n = 16 - i;
    for (let j = i - 1; j >= ellipsis; j--) ip[j + n] = ip[j] as number;
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    return undefined; // :: must stand for at least one group
  }
  return { bytes: ip, is4: false, zone };
}

/** net.ParseIP: always 16 bytes; no zone. */
function parseIP(s: string): Uint8Array | undefined {
  const a = parseAddr(s);
  return a && a.zone === '' ? a.bytes : undefined;
}

const V4_IN_V6 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function to4(ip: Uint8Array): Uint8Array | undefined {
  if (ip.length === 4) return ip;
  if (ip.length === 16 && V4_IN_V6.every((b, i) => ip[i] === b)) return ip.subarray(12);
  return undefined;
}

interface IPNet {
  readonly ip: Uint8Array;
  readonly mask: Uint8Array;
}

/** net.ParseCIDR (Go 1.22+: netip.ParseAddr, then a decimal prefix length that may have leading zeros). */
function parseCIDR(s: string): IPNet | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const addr = parseAddr(s.slice(0, slash));
  if (addr?.zone !== '') return undefined;
  const maskText = s.slice(slash + 1);
  if (!/^[0-9]+$/.test(maskText) || maskText.length > 8) return undefined;
  const n = Number(maskText);
  const len = addr.is4 ? 4 : 16;
  if (n > 8 * len) return undefined;
  const mask = new Uint8Array(len);
  for (let i = 0; i < len; i++) mask[i] = (0xff << (8 - Math.max(0, Math.min(8, n - 8 * i)))) & 0xff;
  return { ip: ipMask(addr.bytes, mask) as Uint8Array, mask };
}

/** net.IP.Mask */
function ipMask(ipIn: Uint8Array, maskIn: Uint8Array): Uint8Array | undefined {
  let ip = ipIn;
  let mask = maskIn;
  if (mask.length === 16 && ip.length === 4 && mask.subarray(0, 12).every((b) => b === 0xff)) mask = mask.subarray(12);
  if (mask.length === 4 && ip.length === 16 && V4_IN_V6.every((b, i) => ip[i] === b)) ip = ip.subarray(12);
  if (ip.length !== mask.length) return undefined;
  return ip.map((b, i) => b & (mask[i] as number));
}

/** net.IPNet.Contains */
function netContains(n: IPNet, ipIn: Uint8Array): boolean {
  let nn = to4(n.ip);
  let m = n.mask;
  if (!nn) {
    nn = n.ip;
    if (nn.length !== 16) return false;
  }
  if (m.length === 4) {
    if (nn.length !== 4) return false;
  } else if (m.length === 16) {
    if (nn.length === 4) m = m.subarray(12);
  } else {
    return false;
  }
  const ip = to4(ipIn) ?? ipIn;
  if (ip.length !== nn.length) return false;
  for (let i = 0; i < ip.length; i++) if (((nn[i] as number) & (m[i] as number)) !== ((ip[i] as number) & (m[i] as number))) return false;
  return true;
}

/** OPA's net.cidr_contains: the second operand is an IP, else a CIDR whose first and last addresses must both be inside. */
function cidrContains(cidr: string, x: string): boolean | undefined {
  const network = parseCIDR(cidr);
  if (!network) return undefined;
  const ip = parseIP(x);
  if (ip) return netContains(network, ip);
  const other = parseCIDR(x);
  if (!other) return undefined;
  const first = other.ip;
  const last = first.map((b, i) => b | (~(other.mask[i] as number) & 0xff));
  return netContains(network, first) && netContains(network, last);
}

// --- time builtins, after Go's time.Parse(time.RFC3339, s) fast path and OPA's int64 range check.

const MIN_INT64 = -(2n ** 63n);
const MAX_INT64 = 2n ** 63n - 1n;

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function floorMod(a: bigint, b: bigint): bigint {
  return a - floorDiv(a, b) * b;
}

function daysInMonth(month: number, year: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y0: number, m: number, d: number): bigint {
  const y = m <= 2 ? y0 - 1 : y0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return BigInt(era * 146097 + doe - 719468);
}

/**
 * time.parse_rfc3339_ns: Go's strict RFC 3339 reader (2006-01-02T15:04:05[.frac]Z07:00, the day must
 * exist, fractions beyond nanoseconds truncated), then OPA's int64-nanosecond range check. Go falls
 * back to its lenient layout parser for other shapes; the model does not know that parser and says so.
 */
function parseRfc3339Ns(s: string): bigint | undefined {
  const m = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})$/.exec(s);
  if (!m) throw new RegoModelError(`time.parse_rfc3339_ns(${JSON.stringify(s)}): only strict RFC 3339 shapes are modelled`);
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(month, year) || hour > 23 || minute > 59 || second > 59) return undefined;
  const frac = m[7] ?? '';
  const nanos = BigInt(frac === '' ? 0 : Number(frac.slice(0, 9).padEnd(9, '0')));
  let offset = 0;
  const zone = m[8] as string;
  if (zone !== 'Z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return undefined;
    offset = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om) * 60;
  }
  const secs = daysFromCivil(year, month, day) * 86_400n + BigInt(hour * 3600 + minute * 60 + second - offset);
  const ns = secs * 1_000_000_000n + nanos;
  return ns < MIN_INT64 || ns > MAX_INT64 ? undefined : ns;
}

/** The exact integer nanoseconds OPA's time builtins accept (a number that is an exact int64). */
function exactNs(v: Value): bigint | undefined {
  if (typeof v === 'bigint') return v >= MIN_INT64 && v <= MAX_INT64 ? v : undefined;
  if (typeof v === 'number' && Number.isInteger(v)) {
    const b = BigInt(v);
    return b >= MIN_INT64 && b <= MAX_INT64 ? b : undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Static checks (a subset of OPA's compiler: names, arity, safety, assignment, recursion)

interface Group {
  /** complete: `p = v`/`p { }`; function: `f(x) { }`; partialObject: `p[k] = v { }` (OPA's multi-value object rule). */
  readonly kind: 'complete' | 'function' | 'partialObject';
  readonly defs: RuleDef[];
  arity: number;
  defaultValue: Value | undefined;
}

/** What the static checks hand to the evaluator. */
interface Analysis {
  readonly groups: ReadonlyMap<string, Group>;
  /**
   * The variables an assignment `x := a[k]` binds by iterating a reference (`k`, unbound before the
   * statement): OPA enumerates the keys of an object (the indices of an array) and binds each in turn.
   */
  readonly refBindings: ReadonlyMap<Stmt, ReadonlySet<string>>;
}

function constantValue(t: Term): Value | undefined {
  switch (t.t) {
    case 'scalar':
      return t.v;
    case 'array': {
      const xs = t.items.map(constantValue);
      return xs.every((x) => x !== undefined) ? (xs as Value[]) : undefined;
    }
    case 'set': {
      const xs = t.items.map(constantValue);
      return xs.every((x) => x !== undefined) ? new RegoSet(xs as Value[]) : undefined;
    }
    case 'object': {
      const o: { [k: string]: Value } = {};
      for (const [k, v] of t.entries) {
        const x = constantValue(v);
        if (x === undefined) return undefined;
        Object.defineProperty(o, k, { value: x, enumerable: true });
      }
      return o;
    }
    default:
      return undefined;
  }
}

function analyze(parser: Parser): Analysis {
  const groups = new Map<string, Group>();
  const refBindings = new Map<Stmt, ReadonlySet<string>>();
  for (const def of parser.rules) {
    const kind = def.args !== undefined ? 'function' : def.key !== undefined ? 'partialObject' : 'complete';
    const g = groups.get(def.name);
    if (g === undefined) {
      groups.set(def.name, { kind, defs: [def], arity: def.args?.length ?? 0, defaultValue: undefined });
    } else {
      // OPA: "conflicting rules found" (a complete rule and a partial one, or a rule and a function).
      if (g.kind !== kind)
        throw new RegoModelError(`line ${def.line}: ${def.name} is defined as two kinds of rule (${g.kind} and ${kind})`);
      if (kind === 'function' && g.arity !== def.args?.length)
        throw new RegoModelError(`line ${def.line}: function ${def.name} is defined with different arities`);
      g.defs.push(def);
    }
    if (BUILTINS.has(def.name) || def.name === 'input') throw new RegoModelError(`line ${def.line}: ${def.name} shadows a builtin`);
  }
  for (const d of parser.defaults) {
    const g = groups.get(d.name);
    if (g?.kind !== 'complete')
      throw new RegoModelError(
        `line ${d.line}: default for ${d.name}, which is not a complete rule (defaults of functions and partial rules are not modelled)`,
      );
    if (g.defaultValue !== undefined) throw new RegoModelError(`line ${d.line}: multiple defaults for ${d.name}`);
    const v = constantValue(d.value);
    if (v === undefined) throw new RegoModelError(`line ${d.line}: the default of ${d.name} must be a constant`);
    g.defaultValue = v;
  }
  const deps = new Map<string, Set<string>>();
  for (const [name, g] of groups) {
    const uses = new Set<string>();
    deps.set(name, uses);
    for (const def of g.defs) {
      const bound = new Set<string>(def.args ?? []);
      const where = (line: number): string => `line ${line} (${name})`;
      const checkTerm = (t: Term, line: number): void => {
        switch (t.t) {
          case 'scalar':
            return;
          case 'wildcard':
            throw new RegoModelError(`${where(line)}: \`_\` is only modelled as a reference key or in \`_ = x\``);
          case 'array':
          case 'set':
            t.items.forEach((x) => {
              checkTerm(x, line);
            });
            return;
          case 'object':
            t.entries.forEach(([, v]) => {
              checkTerm(v, line);
            });
            return;
          case 'var': {
            if (bound.has(t.name) || t.name === 'input') return;
            const target = groups.get(t.name);
            // A partial object rule used whole (or as the head of a reference) is its full extent.
            if (target?.kind === 'complete' || target?.kind === 'partialObject') {
              uses.add(t.name);
              return;
            }
            if (target?.kind === 'function') throw new RegoModelError(`${where(line)}: function ${t.name} used without arguments`);
            throw new RegoModelError(`${where(line)}: unknown or unsafe variable ${t.name}`);
          }
          case 'ref':
            if (t.head.t !== 'var' && t.head.t !== 'array') throw new RegoModelError(`${where(line)}: unsupported reference head`);
            checkTerm(t.head, line);
            for (const p of t.path) if (p.t !== 'wildcard') checkTerm(p, line);
            return;
          case 'call': {
            const builtin = BUILTINS.get(t.fn);
            const fn = groups.get(t.fn);
            if (builtin) {
              if (builtin.arity !== t.args.length) throw new RegoModelError(`${where(line)}: ${t.fn} takes ${builtin.arity} arguments`);
            } else if (fn?.kind === 'function') {
              if (fn.arity !== t.args.length) throw new RegoModelError(`${where(line)}: ${t.fn} takes ${fn.arity} arguments`);
              uses.add(t.fn);
            } else {
              throw new RegoModelError(`${where(line)}: unknown function ${t.fn} (not a modelled builtin)`);
            }
            t.args.forEach((a) => {
              checkTerm(a, line);
            });
            return;
          }
        }
      };
      const checkStmt = (st: Stmt): void => {
        switch (st.s) {
          case 'term':
            checkTerm(st.term, st.line);
            return;
          case 'cmp':
          case 'in':
            checkTerm(st.l, st.line);
            checkTerm(st.r, st.line);
            return;
          case 'defined':
            checkTerm(st.value, st.line);
            return;
          case 'not':
            checkStmt(st.inner);
            return;
          case 'assign': {
            // `x := a[k]` with k not yet bound: the reference enumerates k (OPA's ref iteration). Only
            // this form binds a variable inside a reference here; anywhere else an unbound var is unsafe.
            const binds = new Set<string>();
            if (st.value.t === 'ref') {
              const ref = st.value;
              checkTerm(ref.head, st.line);
              for (const p of ref.path) {
                if (p.t === 'wildcard') continue;
                if (p.t === 'var' && !bound.has(p.name) && p.name !== 'input' && !groups.has(p.name) && !BUILTINS.has(p.name)) {
                  if (binds.has(p.name))
                    throw new RegoModelError(`${where(st.line)}: var ${p.name} appears twice in one reference (a join is not modelled)`);
                  binds.add(p.name);
                  continue;
                }
                checkTerm(p, st.line);
              }
              if (binds.size > 0) refBindings.set(st, binds);
            } else {
              checkTerm(st.value, st.line);
            }
            if (bound.has(st.name) || binds.has(st.name) || groups.has(st.name) || st.name === 'input' || BUILTINS.has(st.name)) {
              throw new RegoModelError(`${where(st.line)}: var ${st.name} assigned above or shadows a rule`);
            }
            binds.forEach((b) => {
              bound.add(b);
            });
            bound.add(st.name);
            return;
          }
        }
      };
      def.body?.forEach(checkStmt);
      // OPA's safety check of rule heads: every variable of the head must be bound by the body.
      if (def.key) {
        if (def.key.t !== 'var' || !bound.has(def.key.name) || (def.args ?? []).includes(def.key.name)) {
          throw new RegoModelError(
            `line ${def.line} (${name}): the key of a partial object rule must be a variable its body binds (var is unsafe)`,
          );
        }
      }
      if (def.value) checkTerm(def.value, def.line);
    }
  }
  // OPA rejects recursion.
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (n: string, path: string[]): void => {
    if (state.get(n) === 'done') return;
    if (state.get(n) === 'visiting') throw new RegoModelError(`rule ${n} is recursive: ${[...path, n].join(' -> ')}`);
    state.set(n, 'visiting');
    for (const d of deps.get(n) ?? []) visit(d, [...path, n]);
    state.set(n, 'done');
  };
  for (const n of groups.keys()) visit(n, []);
  return { groups, refBindings };
}

// ---------------------------------------------------------------------------------------------
// Evaluation

type Env = ReadonlyMap<string, Value>;

const PENDING = Symbol('pending');

interface Query {
  readonly input: Value;
  readonly memo: Map<string, Value | undefined | typeof PENDING>;
}

class Evaluator {
  private readonly groups: ReadonlyMap<string, Group>;
  private readonly refBindings: ReadonlyMap<Stmt, ReadonlySet<string>>;
  private readonly strict: boolean;

  constructor(analysis: Analysis, strict: boolean) {
    this.groups = analysis.groups;
    this.refBindings = analysis.refBindings;
    this.strict = strict;
  }

  /** A complete rule's value, or a partial object rule's full extent (always defined: `{}` when no body holds). */
  document(q: Query, name: string): Value | undefined {
    return this.groups.get(name)?.kind === 'partialObject' ? this.partialObject(q, name) : this.rule(q, name);
  }

  /**
   * The full extent of a partial object rule: every key/value pair any body yields (OPA topdown's
   * TestTopDownPartialObjectDoc: `{}` when none does, one pair twice is fine). Two values for one key
   * is OPA's `eval_conflict_error: object keys must be unique`; the model raises it for the whole
   * extent, which is stricter than OPA for a lookup of another key (OPA then only evaluates that key).
   * Keys other than strings are legal in OPA but not modelled.
   */
  private partialObject(q: Query, name: string): Value {
    const g = this.groups.get(name);
    if (g?.kind !== 'partialObject') throw new RegoModelError(`no partial object rule named ${name}`);
    const memo = q.memo.get(name);
    if (memo === PENDING) throw new RegoModelError(`rule ${name} is recursive`);
    if (memo !== undefined) return memo;
    q.memo.set(name, PENDING);
    const out: { [k: string]: Value } = {};
    for (const def of g.defs) {
      for (const e of this.body(q, def.body ?? [], 0, new Map())) {
        for (const k of this.term(q, def.key as Term, e, undefined)) {
          if (typeof k !== 'string')
            throw new RegoModelError(`partial object rule ${name} produced a key that is not a string (not modelled)`);
          for (const v of this.term(q, def.value as Term, e, undefined)) {
            if (Object.hasOwn(out, k)) {
              if (compareValues(out[k] as Value, v) !== 0) {
                throw new RegoModelError(
                  `partial object rule ${name}: two values for key ${JSON.stringify(k)} (an OPA eval_conflict_error: object keys must be unique)`,
                );
              }
              continue;
            }
            Object.defineProperty(out, k, { value: v, enumerable: true });
          }
        }
      }
    }
    q.memo.set(name, out);
    return out;
  }

  /** The value of a complete rule (or its default), undefined when no body holds and there is no default. */
  rule(q: Query, name: string): Value | undefined {
    const g = this.groups.get(name);
    if (g?.kind !== 'complete') throw new RegoModelError(`no rule named ${name}`);
    const memo = q.memo.get(name);
    if (memo === PENDING) throw new RegoModelError(`rule ${name} is recursive`);
    if (q.memo.has(name)) return memo;
    q.memo.set(name, PENDING);
    // A constant (one body-less definition with a constant value, like acl_directory) is the same
    // for every query: built once.
    const constant = this.constants.get(name);
    if (constant !== undefined) {
      q.memo.set(name, constant);
      return constant;
    }
    const outputs: Value[] = [];
    for (const def of g.defs) this.outputs(q, def, new Map(), outputs);
    const v = this.single(outputs, `complete rule ${name}`) ?? g.defaultValue;
    if (
      g.defs.length === 1 &&
      g.defs[0]?.body === undefined &&
      g.defs[0]?.value !== undefined &&
      constantValue(g.defs[0].value) !== undefined &&
      v !== undefined
    ) {
      this.constants.set(name, v);
    }
    q.memo.set(name, v);
    return v;
  }

  private readonly constants = new Map<string, Value>();

  call(q: Query, name: string, args: readonly Value[]): Value | undefined {
    const builtin = BUILTINS.get(name);
    if (builtin) {
      const result = builtin.fn(args);
      // With --strict-builtin-errors, OPA fails the whole query instead of making the call undefined.
      if (result === undefined && this.strict)
        throw new StrictBuiltinError(
          `${name}(${args.map((a) => JSON.stringify(a, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).join(', ')}) raised an error`,
        );
      return result;
    }
    const g = this.groups.get(name);
    if (g?.kind !== 'function') throw new RegoModelError(`no function named ${name}`);
    const outputs: Value[] = [];
    for (const def of g.defs) {
      const env = new Map<string, Value>();
      (def.args as readonly string[]).forEach((a, i) => {
        env.set(a, args[i] as Value);
      });
      this.outputs(q, def, env, outputs);
    }
    return this.single(outputs, `function ${name}`);
  }

  private single(outputs: readonly Value[], what: string): Value | undefined {
    for (const o of outputs) {
      if (compareValues(o, outputs[0] as Value) !== 0)
        throw new RegoModelError(`${what} produced conflicting outputs (an OPA eval_conflict_error)`);
    }
    return outputs[0];
  }

  private outputs(q: Query, def: RuleDef, env: Env, out: Value[]): void {
    for (const e of this.body(q, def.body ?? [], 0, env)) {
      if (def.value === undefined) {
        out.push(true);
        continue;
      }
      out.push(...this.term(q, def.value, e, undefined));
    }
  }

  /** Every environment in which the statements from index i on all succeed. */
  private body(q: Query, stmts: readonly Stmt[], i: number, env: Env): Env[] {
    if (i === stmts.length) return [env];
    const out: Env[] = [];
    for (const e of this.statement(q, stmts[i] as Stmt, env, undefined)) out.push(...this.body(q, stmts, i + 1, e));
    return out;
  }

  private statement(q: Query, st: Stmt, env: Env, subst: ReadonlyMap<Term, Value> | undefined): Env[] {
    switch (st.s) {
      case 'term':
        return this.term(q, st.term, env, subst).some((v) => v !== false) ? [env] : [];
      case 'cmp': {
        for (const l of this.term(q, st.l, env, subst)) {
          for (const r of this.term(q, st.r, env, subst)) if (holds(st.op, compareValues(l, r))) return [env];
        }
        return [];
      }
      case 'in': {
        for (const l of this.term(q, st.l, env, subst)) {
          for (const r of this.term(q, st.r, env, subst)) if (member(l, r)) return [env];
        }
        return [];
      }
      case 'defined':
        return this.term(q, st.value, env, subst).length > 0 ? [env] : [];
      case 'assign': {
        const binds = this.refBindings.get(st);
        if (binds) return this.iterate(q, st.value as Extract<Term, { t: 'ref' }>, binds, env).map(([v, e]) => new Map(e).set(st.name, v));
        return this.term(q, st.value, env, subst).map((v) => new Map(env).set(st.name, v));
      }
      case 'not': {
        // The hoisted terms are evaluated first, outside the negation; an undefined one fails the statement.
        const combos = (i: number, s: Map<Term, Value>): boolean => {
          if (i === st.hoisted.length) return this.statement(q, st.inner, env, s).length === 0;
          const t = st.hoisted[i] as Term;
          for (const v of this.term(q, t, env, s)) if (combos(i + 1, new Map(s).set(t, v))) return true;
          return false;
        };
        return combos(0, new Map()) ? [env] : [];
      }
    }
  }

  /**
   * A reference whose path holds variables to bind (`a[k]`, k unbound): each value it reaches, with
   * the bindings that reach it. A binding var ranges over the keys of an object, the indices of an
   * array and the elements of a set, as OPA's evalRef does; over a scalar it has no value.
   */
  private iterate(q: Query, ref: Extract<Term, { t: 'ref' }>, binds: ReadonlySet<string>, env: Env): [Value, Env][] {
    let cur: [Value, Env][] = this.term(q, ref.head, env, undefined).map((v) => [v, env]);
    for (const key of ref.path) {
      const next: [Value, Env][] = [];
      for (const [c, e] of cur) {
        if (key.t === 'wildcard') {
          for (const v of children(c)) next.push([v, e]);
        } else if (key.t === 'var' && binds.has(key.name)) {
          const entries: [Value, Value][] = isArray(c)
            ? c.map((v, i) => [i, v])
            : c instanceof RegoSet
              ? c.items.map((v) => [v, v])
              : isObject(c)
                ? Object.keys(c).map((k) => [k, c[k] as Value])
                : [];
          for (const [k, v] of entries) next.push([v, new Map(e).set(key.name, k)]);
        } else {
          for (const k of this.term(q, key, e, undefined)) {
            const v = lookup(c, k);
            if (v !== undefined) next.push([v, e]);
          }
        }
      }
      cur = next;
      if (cur.length === 0) break;
    }
    return cur;
  }

  /** The values a term takes (several when a `_` iterates; none when undefined). */
  private term(q: Query, t: Term, env: Env, subst: ReadonlyMap<Term, Value> | undefined): Value[] {
    const fixed = subst?.get(t);
    if (fixed !== undefined) return [fixed];
    switch (t.t) {
      case 'scalar':
        return [t.v];
      case 'wildcard':
        throw new RegoModelError('`_` has no value');
      case 'array':
        return this.product(q, t.items, env, subst);
      case 'set':
        return this.product(q, t.items, env, subst).map((xs) => new RegoSet(xs));
      case 'object':
        return this.product(
          q,
          t.entries.map(([, v]) => v),
          env,
          subst,
        ).map((vals) => {
          const o: { [k: string]: Value } = {};
          t.entries.forEach(([k], i) => {
            Object.defineProperty(o, k, { value: vals[i] as Value, enumerable: true });
          });
          return o;
        });
      case 'var': {
        const local = env.get(t.name);
        if (local !== undefined) return [local];
        if (t.name === 'input') return [q.input];
        const v = this.document(q, t.name);
        return v === undefined ? [] : [v];
      }
      case 'ref': {
        let cur = this.term(q, t.head, env, subst);
        for (const key of t.path) {
          const next: Value[] = [];
          if (key.t === 'wildcard') {
            for (const c of cur) next.push(...children(c));
          } else {
            const keys = this.term(q, key, env, subst);
            for (const c of cur)
              for (const k of keys) {
                const v = lookup(c, k);
                if (v !== undefined) next.push(v);
              }
          }
          cur = next;
          if (cur.length === 0) break;
        }
        return cur;
      }
      case 'call': {
        const out: Value[] = [];
        for (const args of this.product(q, t.args, env, subst)) {
          const v = this.call(q, t.fn, args);
          if (v !== undefined) out.push(v);
        }
        return out;
      }
    }
  }

  private product(q: Query, terms: readonly Term[], env: Env, subst: ReadonlyMap<Term, Value> | undefined): Value[][] {
    let acc: Value[][] = [[]];
    for (const t of terms) {
      const vals = this.term(q, t, env, subst);
      const next: Value[][] = [];
      for (const prefix of acc) for (const v of vals) next.push([...prefix, v]);
      acc = next;
      if (acc.length === 0) break;
    }
    return acc;
  }
}

function holds(op: CompareOp, c: number): boolean {
  switch (op) {
    case '==':
      return c === 0;
    case '!=':
      return c !== 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
  }
}

/** `x in c` (internal.member_2): elements of an array or set, values of an object; false otherwise. */
function member(x: Value, c: Value): boolean {
  if (isArray(c)) return c.some((v) => compareValues(v, x) === 0);
  if (c instanceof RegoSet) return c.items.some((v) => compareValues(v, x) === 0);
  if (isObject(c)) return Object.values(c).some((v) => compareValues(v, x) === 0);
  return false;
}

function children(c: Value): Value[] {
  if (isArray(c)) return [...c];
  if (c instanceof RegoSet) return [...c.items];
  if (isObject(c)) return Object.values(c);
  return [];
}

/** One step of a reference; undefined for a missing key, a wrong key type, or a scalar. */
function lookup(c: Value, k: Value): Value | undefined {
  if (isArray(c)) {
    if (typeof k === 'number' && Number.isInteger(k) && k >= 0 && k < c.length) return c[k] as Value;
    if (typeof k === 'bigint' && k >= 0n && k < BigInt(c.length)) return c[Number(k)] as Value;
    return undefined;
  }
  if (c instanceof RegoSet) return c.items.find((v) => compareValues(v, k) === 0);
  if (isObject(c)) return typeof k === 'string' && Object.hasOwn(c, k) ? c[k] : undefined;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Public API

export interface RegoPolicy {
  /** 0 or 1 (1 when the module imports rego.v1). */
  readonly version: 0 | 1;
  readonly packagePath: string;
  /** `data.<package>.allow` as a decision: true only when it is the boolean true. */
  allow(input: unknown): boolean;
  /** Whether a complete rule is (defined and) true for this input. */
  rule(name: string, input: unknown): boolean;
  /** The value of a complete rule (undefined when it is undefined) or the full extent of a partial object rule. */
  value(name: string, input: unknown): Value | undefined;
  /** Calls a function of the policy or a modelled builtin; undefined when the call is undefined. */
  call(name: string, args: readonly Value[], input?: unknown): Value | undefined;
}

/** A builtin error under `strictBuiltinErrors`: OPA would fail the query (`opa eval --strict-builtin-errors`). */
export class StrictBuiltinError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StrictBuiltinError';
  }
}

export interface LoadOptions {
  /** Model `--strict-builtin-errors`: a builtin error throws StrictBuiltinError instead of being undefined. */
  readonly strictBuiltinErrors?: boolean;
}

/** Parses, checks and prepares a Rego module in the modelled subset; throws RegoModelError otherwise. */
export function loadPolicy(text: string, options: LoadOptions = {}): RegoPolicy {
  const parser = new Parser(tokenize(text));
  parser.parseModule();
  const ev = new Evaluator(analyze(parser), options.strictBuiltinErrors === true);
  const query = (input: unknown): Query => ({ input: jsonValue(input, 'input'), memo: new Map() });
  const value = (name: string, input: unknown): Value | undefined => ev.document(query(input), name);
  return {
    version: parser.version,
    packagePath: parser.packagePath,
    allow(input) {
      const v = value('allow', input);
      if (v !== undefined && typeof v !== 'boolean') throw new RegoModelError('allow is not a boolean');
      return v === true;
    },
    rule: (name, input) => value(name, input) === true,
    value,
    call: (name, args, input = {}) => ev.call(query(input), name, args),
  };
}
