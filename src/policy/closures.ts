// Conditions compiled into closures, once per condition *shape*. A shape is the condition with its
// constants (literals, CIDR blocks) taken out: `principal.team == "blue"` and `principal.team ==
// "red"` share one shape. Constants are numbered in a fixed walk of the tree and passed at call
// time, so rules that differ only in constants share the same closures. A tenant with thousands of
// rules then has a handful of shapes that stay in the CPU cache, plus one small constants array per
// rule, instead of a closure tree per rule scattered over the heap.
import type { Cidr, Cond, Json, Value } from './model.ts';
import { walkCondition } from './model.ts';
import { cidrContains, parseIp } from './ip.ts';
import { parseTimestamp } from './timestamps.ts';
import { ERR, type JsonMap, type Result, celCompare, celEquals, celIn, celSize, isMap } from './values.ts';

/** The decision input as OPA sees it (DESIGN.md section 2), already normalized (normalizeInput). */
export interface DecisionInput {
  readonly principal: JsonMap;
  readonly action: string;
  readonly resource: JsonMap;
  readonly context: JsonMap;
  /** The action's properties (AuthZEN `action.properties`); {} when the request has none. */
  readonly actionProperties: JsonMap;
}

/** Outcome of a condition: false, true or an error. */
export const FALSE = 0;
export const TRUE = 1;
export const ERROR = 2;
export type Truth = typeof FALSE | typeof TRUE | typeof ERROR;

/** A condition's constants, in the order `constantsOf` walks the tree. */
export type Constants = readonly (Json | Cidr)[];
export type ValueFn = (input: DecisionInput, k: Constants) => Result;
export type CondFn = (input: DecisionInput, k: Constants) => Truth;

function lookup(v: Result, key: string | number): Result {
  if (v === ERR) return ERR;
  if (typeof key === 'number') {
    if (!Array.isArray(v)) return ERR;
    return key < v.length ? (v[key] as Json) : ERR;
  }
  if (!isMap(v) || !Object.hasOwn(v, key)) return ERR;
  return v[key] as Json;
}

function truth(b: boolean): Truth {
  return b ? TRUE : FALSE;
}

/** Numbers the constants of one tree during compilation, in the order constantsOf lists them. */
interface Slots {
  next: number;
}

// compileValue and compileCond number constants in walkCondition's order (model.ts): left to right,
// a CIDR block before its address, a value before the values nested in it.

function compileValue(v: Value, slots: Slots): ValueFn {
  switch (v.kind) {
    case 'literal': {
      const slot = slots.next++;
      return (_input, k) => k[slot] as Json;
    }
    case 'path': {
      const { root, keys } = v;
      if (keys.length === 0) return (input) => input[root];
      return (input) => {
        let cur: Result = input[root];
        for (const key of keys) {
          cur = lookup(cur, key);
          if (cur === ERR) return ERR;
        }
        return cur;
      };
    }
    case 'size': {
      const arg = compileValue(v.arg, slots);
      return (input, k) => {
        const a = arg(input, k);
        return a === ERR ? ERR : celSize(a);
      };
    }
    case 'time': {
      const arg = compileValue(v.arg, slots);
      const part = v.part;
      return (input, k) => {
        const a = arg(input, k);
        if (typeof a !== 'string') return ERR;
        const ms = parseTimestamp(a);
        if (ms === undefined) return ERR;
        const d = new Date(ms);
        return part === 'hours' ? d.getUTCHours() : part === 'minutes' ? d.getUTCMinutes() : d.getUTCDay();
      };
    }
  }
}

// Leaf operands are read inline rather than through a closure each: a constant, or one string key of
// principal, resource, context or actionProperties (nearly every operand), is kept as plain captured values, and only
// other values get a compiled reader.
const CONSTANT = 0;
const KEY = 1;
const READER = 2;
type OperandKind = typeof CONSTANT | typeof KEY | typeof READER;
type MapRoot = 'principal' | 'resource' | 'context' | 'actionProperties';
interface Operand {
  kind: OperandKind;
  slot: number;
  root: MapRoot;
  key: string;
  reader: ValueFn;
}

const NO_READER: ValueFn = () => ERR;

function operand(v: Value, slots: Slots): Operand {
  if (v.kind === 'literal') return { kind: CONSTANT, slot: slots.next++, root: 'principal', key: '', reader: NO_READER };
  if (v.kind === 'path' && v.root !== 'action' && v.keys.length === 1 && typeof v.keys[0] === 'string') {
    return { kind: KEY, slot: -1, root: v.root, key: v.keys[0], reader: NO_READER };
  }
  return { kind: READER, slot: -1, root: 'principal', key: '', reader: compileValue(v, slots) };
}

function read(input: DecisionInput, k: Constants, kind: OperandKind, slot: number, root: MapRoot, key: string, reader: ValueFn): Result {
  if (kind === KEY) {
    const o = input[root];
    return Object.hasOwn(o, key) ? (o[key] as Json) : ERR;
  }
  return kind === CONSTANT ? (k[slot] as Json) : reader(input, k);
}

/** `(input) => f(left, right)` with both operands read inline; f sees only values, never ERR. */
function binary(left: Value, right: Value, slots: Slots, f: (a: Json, b: Json) => Truth): CondFn {
  const { kind: lk, slot: ls, root: lr, key: lkey, reader: lf } = operand(left, slots);
  const { kind: rk, slot: rs, root: rr, key: rkey, reader: rf } = operand(right, slots);
  return (input, k) => {
    const a = read(input, k, lk, ls, lr, lkey, lf);
    if (a === ERR) return ERROR;
    const b = read(input, k, rk, rs, rr, rkey, rf);
    if (b === ERR) return ERROR;
    return f(a, b);
  };
}

const EQ = (a: Json, b: Json): Truth => (celEquals(a, b) ? TRUE : FALSE);
const NE = (a: Json, b: Json): Truth => (celEquals(a, b) ? FALSE : TRUE);
/** An ordering test on celCompare's sign; an error where ordering is undefined. */
function order(holds: (sign: number) => boolean): (a: Json, b: Json) => Truth {
  return (a, b) => {
    const n = celCompare(a, b);
    return n === ERR ? ERROR : truth(holds(n));
  };
}
const ORDER: Record<'<' | '<=' | '>' | '>=', (a: Json, b: Json) => Truth> = {
  '<': order((n) => n < 0),
  '<=': order((n) => n <= 0),
  '>': order((n) => n > 0),
  '>=': order((n) => n >= 0),
};
const IN = (x: Json, c: Json): Truth => {
  const r = celIn(x, c);
  return r === ERR ? ERROR : truth(r);
};
/** String functions: both sides must be strings; CEL evaluates both before checking either. */
function onStrings(holds: (s: string, p: string) => boolean): (s: Json, p: Json) => Truth {
  return (s, p) => (typeof s === 'string' && typeof p === 'string' ? truth(holds(s, p)) : ERROR);
}
const STRING_TESTS = {
  startsWith: onStrings((s, p) => s.startsWith(p)),
  endsWith: onStrings((s, p) => s.endsWith(p)),
  contains: onStrings((s, p) => s.includes(p)),
};

function compileCond(c: Cond, slots: Slots): CondFn {
  switch (c.kind) {
    case 'const': {
      const t = truth(c.value);
      return () => t;
    }
    case 'and': {
      const l = compileCond(c.left, slots);
      const r = compileCond(c.right, slots);
      // CEL: false wins over an error on either side; an error wins over true.
      return (input, k) => {
        const a = l(input, k);
        if (a === FALSE) return FALSE;
        const b = r(input, k);
        if (b === FALSE) return FALSE;
        return a === ERROR || b === ERROR ? ERROR : TRUE;
      };
    }
    case 'or': {
      const l = compileCond(c.left, slots);
      const r = compileCond(c.right, slots);
      return (input, k) => {
        const a = l(input, k);
        if (a === TRUE) return TRUE;
        const b = r(input, k);
        if (b === TRUE) return TRUE;
        return a === ERROR || b === ERROR ? ERROR : FALSE;
      };
    }
    case 'not': {
      const o = compileCond(c.operand, slots);
      return (input, k) => {
        const a = o(input, k);
        return a === ERROR ? ERROR : a === TRUE ? FALSE : TRUE;
      };
    }
    case 'bool': {
      const { kind, slot, root, key, reader } = operand(c.value, slots);
      return (input, k) => {
        const a = read(input, k, kind, slot, root, key, reader);
        return a === true ? TRUE : a === false ? FALSE : ERROR;
      };
    }
    case 'compare':
      return binary(c.left, c.right, slots, c.op === '==' ? EQ : c.op === '!=' ? NE : ORDER[c.op]);
    case 'in':
      return binary(c.element, c.collection, slots, IN);
    case 'string': {
      const test = STRING_TESTS[c.fn];
      const t = compileValue(c.target, slots);
      const a = compileValue(c.arg, slots);
      return (input, k) => test(t(input, k) as Json, a(input, k) as Json);
    }
    case 'cidr': {
      const blockSlot = slots.next++;
      const { kind, slot, root, key, reader } = operand(c.address, slots);
      return (input, k) => {
        const a = read(input, k, kind, slot, root, key, reader);
        if (typeof a !== 'string') return ERROR;
        const ip = parseIp(a);
        return ip ? truth(cidrContains(k[blockSlot] as Cidr, ip)) : ERROR;
      };
    }
  }
}

/** The constants of a condition, in the walk order the compiled shape expects (walkCondition). */
export function constantsOf(c: Cond): (Json | Cidr)[] {
  const out: (Json | Cidr)[] = [];
  walkCondition(
    c,
    (v) => {
      if (v.kind === 'literal') out.push(v.value as Json);
    },
    (block) => out.push(block),
  );
  return out;
}

/** The shape of a condition: its tree with every constant replaced by a placeholder. */
export function shapeKey(c: Cond): string {
  return JSON.stringify(c, function hideConstants(this: unknown, key: string, value: unknown) {
    if (key === 'cidr') return '?';
    if (key === 'value' && (this as { kind?: string }).kind === 'literal') return '?';
    return value;
  });
}

// Shapes are shared between rules and held weakly, so one that no rule uses any more is collected.
const shapes = new Map<string, WeakRef<CondFn>>();
const forget = new FinalizationRegistry<string>((key) => {
  if (shapes.get(key)?.deref() === undefined) shapes.delete(key);
});

/** The compiled closures for a condition's shape (shared with every condition of the same shape). */
export function compileShape(c: Cond): CondFn {
  const key = shapeKey(c);
  const known = shapes.get(key)?.deref();
  if (known) return known;
  const fn = compileCond(c, { next: 0 });
  shapes.set(key, new WeakRef(fn));
  forget.register(fn, key);
  return fn;
}

/** A reader for one attribute path, for explanations ("principal.team is missing"). */
export function compileReader(path: Extract<Value, { kind: 'path' }>): (input: DecisionInput) => Result {
  const fn = compileValue(path, { next: 0 });
  return (input) => fn(input, []);
}

/** Compiles a bare condition: for tests and tools that evaluate one expression. */
export function compileConditionFn(cond: Cond): (input: DecisionInput) => Truth {
  const fn = compileShape(cond);
  const k = constantsOf(cond);
  return (input) => fn(input, k);
}
