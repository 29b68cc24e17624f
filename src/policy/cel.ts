// CEL front end: @bufbuild/cel parses the condition; this file turns its syntax tree into our
// intermediate form (model.ts), accepting only the documented subset (docs/rules.md) and naming the
// position and the construct of anything else.
import { parse } from '@bufbuild/cel';
import type { Expr, Expr_Call } from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import type { CompareOp, Cond, Literal, Root, StringFn, TimePart, Value } from './model.ts';
import { ROOTS } from './model.ts';
import { parseCidr } from './ip.ts';
import { fillTemplate, templateOf } from './celtemplate.ts';

/** A condition that cannot be compiled, with the place it went wrong (1-based line and column). */
export interface ConditionError {
  /** syntax: the text is not CEL; unsupported: valid CEL outside the subset we translate to Rego. */
  readonly kind: 'syntax' | 'unsupported';
  readonly message: string;
  readonly line: number;
  readonly column: number;
}

export type CompileResult = { ok: true; cond: Cond } | { ok: false; error: ConditionError };

class Reject extends Error {
  readonly offset: number;
  constructor(offset: number, message: string) {
    super(message);
    this.offset = offset;
  }
}

const COMPARE: Record<string, CompareOp> = { '_==_': '==', '_!=_': '!=', '_<_': '<', '_<=_': '<=', '_>_': '>', '_>=_': '>=' };
const STRING_FNS: ReadonlySet<string> = new Set<StringFn>(['startsWith', 'endsWith', 'contains']);
const TIME_PARTS: Record<string, TimePart> = { getHours: 'hours', getMinutes: 'minutes', getDayOfWeek: 'dayOfWeek' };
const OPERATOR_NAMES: Record<string, string> = {
  '_+_': 'addition "+"',
  '_-_': 'subtraction "-"',
  '_*_': 'multiplication "*"',
  '_/_': 'division "/"',
  '_%_': 'modulo "%"',
  '-_': 'negation of a non-literal "-"',
  '_?_:_': 'the conditional operator "? :"',
  '_[?_]': 'optional indexing',
  '_?._': 'optional selection',
};
/** Integers beyond 2^53 cannot be compared exactly with JSON numbers, so they are rejected. */
const MAX_EXACT = 2n ** 53n;

/** Where each expression of the parsed condition starts: a code point offset by expression id. */
type Positions = Readonly<Record<string, number>>;

/**
 * Results by condition text, shared by every caller: the controllers compile a rule's condition and
 * lint reads the same text again (a first start of 10,000 distinct conditions paid about 1 s twice).
 * Results are never changed once made. Bounded: the oldest is dropped first.
 */
const COMPILED = new Map<string, CompileResult>();
const MAX_COMPILED = 20_000;
/**
 * Results by template text (celtemplate.ts): conditions that differ only in their strings are parsed
 * once (a start of 10,000 rules with a constant each parsed 10,000 times, 1.7 s). Bounded as above.
 */
const TEMPLATES = new Map<string, CompileResult>();
const MAX_TEMPLATES = 2_000;

function remember(cache: Map<string, CompileResult>, max: number, text: string, result: CompileResult): CompileResult {
  if (cache.size >= max) cache.delete(cache.keys().next().value as string);
  cache.set(text, result);
  return result;
}

/** Compiles a CEL condition into the intermediate form, or says where and why it is outside the subset. */
export function compileCondition(text: string): CompileResult {
  const known = COMPILED.get(text);
  if (known !== undefined) return known;
  return remember(COMPILED, MAX_COMPILED, text, fromTemplate(text) ?? compileWhole(text));
}

/**
 * The condition compiled through its template; undefined when it has none or the template does not
 * compile (then the text is compiled whole, so an error names its own position and wording).
 */
function fromTemplate(text: string): CompileResult | undefined {
  const template = templateOf(text);
  if (!template) return undefined;
  const compiled = TEMPLATES.get(template.key) ?? remember(TEMPLATES, MAX_TEMPLATES, template.key, compileWhole(template.key));
  return compiled.ok ? { ok: true, cond: fillTemplate(compiled.cond, template.strings) } : undefined;
}

/** Compiles the text whole, bypassing both caches: what every cached answer must equal (tests compare them). */
export function compileWhole(text: string): CompileResult {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(text);
  } catch (err) {
    return { ok: false, error: syntaxError(err instanceof Error ? err.message : String(err)) };
  }
  const at: Positions = parsed.sourceInfo?.positions ?? {};
  try {
    return { ok: true, cond: asCond(at, parsed.expr) };
  } catch (err) {
    if (err instanceof Reject) return { ok: false, error: positioned(text, err.offset, err.message) };
    throw err;
  }
}

function reject(at: Positions, e: Expr, message: string): never {
  throw new Reject(at[String(e.id)] ?? 0, message);
}

/** The literal `e` spells (a constant, or a list of literals); undefined when it is not a literal. */
function literalOf(at: Positions, e: Expr): Literal | undefined {
  const k = e.exprKind;
  if (k.case === 'constExpr') {
    const c = k.value.constantKind;
    switch (c.case) {
      case 'stringValue':
        return c.value.isWellFormed() ? c.value : c.value.toWellFormed();
      case 'boolValue':
        return c.value;
      case 'nullValue':
        return null;
      case 'doubleValue':
        if (!Number.isFinite(c.value)) return reject(at, e, 'numbers must be finite');
        return c.value;
      case 'int64Value':
      case 'uint64Value': {
        const big = BigInt(c.value);
        if (big > MAX_EXACT || big < -MAX_EXACT)
          return reject(at, e, `integer ${big} is too large: conditions compare numbers as JSON does, exactly only up to 2^53`);
        return Number(big);
      }
      case 'bytesValue':
        return reject(at, e, 'bytes literals are not supported');
      default:
        return reject(at, e, `literal of kind ${String(c.case)} is not supported`);
    }
  }
  if (k.case === 'listExpr') {
    return k.value.elements.map((el) => {
      const lit = literalOf(at, el);
      if (lit === undefined) return reject(at, el, 'list literals may hold only literal values (strings, numbers, booleans, null, lists)');
      return lit;
    });
  }
  return undefined;
}

/** `e` as a value: a literal, an attribute path, size() or a timestamp part. */
function asValue(at: Positions, e: Expr): Value {
  const lit = literalOf(at, e);
  if (lit !== undefined) return { kind: 'literal', value: lit };
  const k = e.exprKind;
  switch (k.case) {
    case 'identExpr': {
      const name = k.value.name;
      if ((ROOTS as readonly string[]).includes(name)) return { kind: 'path', root: name as Root, keys: [] };
      return reject(at, e, `unknown name "${name}": conditions read principal.*, resource.*, context.*, action and actionProperties.*`);
    }
    case 'selectExpr': {
      if (k.value.testOnly)
        return reject(at, e, 'has() is not supported; use "key" in principal (or resource, context, any map) to test presence');
      const operand = k.value.operand;
      if (!operand) return reject(at, e, 'selection without an operand');
      const base = asValue(at, operand);
      if (base.kind !== 'path') return reject(at, e, `field selection ".${k.value.field}" applies only to attributes`);
      return { kind: 'path', root: base.root, keys: [...base.keys, k.value.field] };
    }
    case 'structExpr':
      return reject(at, e, 'map literals are not supported');
    case 'comprehensionExpr':
      return reject(at, e, 'macros (all, exists, exists_one, map, filter) are not supported');
    case 'callExpr':
      return callValue(at, e, k.value);
    default:
      return reject(at, e, `expression of kind ${String(k.case)} is not supported`);
  }
}

/** A call used as a value: indexing, size() or a timestamp part; any other call is rejected here. */
function callValue(at: Positions, e: Expr, call: Expr_Call): Value {
  const { function: fn, args, target } = call;
  if (fn === '_[_]') return indexValue(at, e, args);
  if (fn === 'size') {
    const arg = target ?? args[0];
    if (!arg || args.length !== (target ? 0 : 1)) return reject(at, e, 'size takes exactly one argument');
    return { kind: 'size', arg: asValue(at, arg) };
  }
  if (fn in TIME_PARTS) {
    if (target?.exprKind.case !== 'callExpr' || target.exprKind.value.function !== 'timestamp') {
      return reject(at, e, `${fn}() applies to timestamp(...), for example timestamp(context.timeOfDay).${fn}()`);
    }
    if (args.length > 0) return reject(at, e, `${fn}() takes no time zone here: hours, minutes and weekdays are read in UTC`);
    const tsArgs = target.exprKind.value.args;
    if (tsArgs.length !== 1 || target.exprKind.value.target) return reject(at, target, 'timestamp takes exactly one argument');
    return { kind: 'time', part: TIME_PARTS[fn] as TimePart, arg: asValue(at, tsArgs[0] as Expr) };
  }
  if (fn === 'timestamp') return reject(at, e, 'timestamp(...) can only be read through getHours(), getMinutes() or getDayOfWeek()');
  if (fn in COMPARE || fn === '_&&_' || fn === '_||_' || fn === '!_' || fn === '@in' || STRING_FNS.has(fn) || fn === 'containsIP') {
    return reject(at, e, `a condition (${describe(fn)}) cannot be used as a value here`);
  }
  return reject(at, e, unsupportedCall(fn));
}

/** `operand[index]`: a map key (string literal) or a list position (non-negative integer literal) of an attribute. */
function indexValue(at: Positions, e: Expr, args: readonly Expr[]): Value {
  const [operand, index] = args;
  if (!operand || !index) return reject(at, e, 'malformed index');
  const base = asValue(at, operand);
  if (base.kind !== 'path') return reject(at, e, 'indexing applies only to attributes');
  const key = literalOf(at, index);
  if (typeof key === 'string') return { kind: 'path', root: base.root, keys: [...base.keys, key] };
  if (
    typeof key === 'number' &&
    Number.isInteger(key) &&
    key >= 0 &&
    index.exprKind.case === 'constExpr' &&
    index.exprKind.value.constantKind.case !== 'doubleValue'
  ) {
    return { kind: 'path', root: base.root, keys: [...base.keys, key] };
  }
  return reject(at, index, 'an index must be a string literal (map key) or a non-negative integer literal (list position)');
}

/** `e` as a condition: a boolean literal, a logical or comparison call, or a boolean attribute. */
function asCond(at: Positions, e: Expr): Cond {
  const k = e.exprKind;
  if (k.case === 'constExpr' || k.case === 'listExpr') {
    const lit = literalOf(at, e);
    if (typeof lit === 'boolean') return { kind: 'const', value: lit };
    return reject(at, e, 'a condition must be true or false, not a literal of another type');
  }
  if (k.case === 'callExpr') {
    const c = callCond(at, e, k.value);
    if (c) return c;
  }
  const v = asValue(at, e);
  if (v.kind === 'path') return { kind: 'bool', value: v };
  return reject(
    at,
    e,
    `${v.kind === 'size' ? 'size(...)' : 'a timestamp part'} is a number, not a condition; compare it, for example size(x) > 0`,
  );
}

/** A call as a condition (undefined: not a condition call, so it is read as a value). */
function callCond(at: Positions, e: Expr, call: Expr_Call): Cond | undefined {
  const { function: fn, args, target } = call;
  if (fn === '_&&_' || fn === '_||_') {
    if (args.length < 2) return reject(at, e, `malformed ${fn}`);
    const kind = fn === '_&&_' ? 'and' : 'or';
    return args.map((a) => asCond(at, a)).reduce((left, right) => ({ kind, left, right }));
  }
  if (fn === '!_') return { kind: 'not', operand: asCond(at, args[0] as Expr) };
  const op = COMPARE[fn];
  if (op) return { kind: 'compare', op, left: asValue(at, args[0] as Expr), right: asValue(at, args[1] as Expr) };
  if (fn === '@in') return { kind: 'in', element: asValue(at, args[0] as Expr), collection: asValue(at, args[1] as Expr) };
  if (STRING_FNS.has(fn)) {
    if (!target || args.length !== 1) return reject(at, e, `${fn} is a method with one argument, for example resource.path.${fn}("x")`);
    return { kind: 'string', fn: fn as StringFn, target: asValue(at, target), arg: asValue(at, args[0] as Expr) };
  }
  if (fn === 'containsIP') return cidrCond(at, e, call);
  return undefined;
}

/** `cidr("<block>").containsIP(x)`, the block checked now. */
function cidrCond(at: Positions, e: Expr, call: Expr_Call): Cond {
  const { args, target } = call;
  if (!target || args.length !== 1 || target.exprKind.case !== 'callExpr' || target.exprKind.value.function !== 'cidr') {
    return reject(at, e, 'containsIP applies to cidr("<block>"), for example cidr("10.0.0.0/8").containsIP(context.ipAddress)');
  }
  const blockArgs = target.exprKind.value.args;
  const block = blockArgs.length === 1 ? literalOf(at, blockArgs[0] as Expr) : undefined;
  if (typeof block !== 'string') return reject(at, target, 'cidr(...) takes one string literal, such as "10.0.0.0/8"');
  const parsedCidr = parseCidr(block);
  if (!parsedCidr) return reject(at, target, `"${block}" is not a CIDR block such as "10.0.0.0/8" or "2001:db8::/32"`);
  let address = args[0] as Expr;
  // ip(x) is accepted as in Kubernetes CEL; it means the same as x here.
  if (
    address.exprKind.case === 'callExpr' &&
    address.exprKind.value.function === 'ip' &&
    !address.exprKind.value.target &&
    address.exprKind.value.args.length === 1
  ) {
    address = address.exprKind.value.args[0] as Expr;
  }
  return { kind: 'cidr', cidr: parsedCidr, address: asValue(at, address) };
}

function describe(fn: string): string {
  const op = COMPARE[fn];
  if (op) return `"${op}"`;
  return ({ '_&&_': '"&&"', '_||_': '"||"', '!_': '"!"', '@in': '"in"' } as Record<string, string>)[fn] ?? `${fn}()`;
}

function unsupportedCall(fn: string): string {
  const op = OPERATOR_NAMES[fn];
  if (op) return `${op} is not supported`;
  return `function ${fn}() is not supported; see docs/rules.md for the supported functions`;
}

/** Turns a 0-based offset (in code points, as the parser counts) into a 1-based line and column. */
function positioned(text: string, offset: number, message: string): ConditionError {
  const points = Array.from(text);
  let line = 1;
  let column = 1;
  for (let i = 0; i < Math.min(offset, points.length); i++) {
    if (points[i] === '\n') {
      line++;
      column = 1;
    } else column++;
  }
  return { kind: 'unsupported', line, column, message: `${message} (at line ${line}, column ${column})` };
}

/** The parser reports "<input>:L:C: message"; keep its position and wording. */
function syntaxError(raw: string): ConditionError {
  const m = /^<input>:(\d+):(\d+): ([\s\S]*)$/.exec(raw);
  if (!m) return { kind: 'syntax', line: 1, column: 1, message: `syntax error: ${raw}` };
  const line = Number(m[1]);
  const column = Number(m[2]);
  return { kind: 'syntax', line, column, message: `syntax error at line ${line}, column ${column}: ${m[3]}` };
}
