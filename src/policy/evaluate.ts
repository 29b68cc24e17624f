// Native evaluator: every condition is compiled once into closures (no tree walking per request),
// and rules are indexed by subject type, action and resource type so a decision touches only the
// rules that can match.
import type { Cond, Json, RuleModel, Value } from './model.ts';
import { pathText, pathsOf } from './model.ts';
import {
  ERR, type Err, type JsonMap, type Result,
  celCompare, celEquals, celIn, celSize, cidrContains, isMap, parseIp, parseTimestamp,
} from './values.ts';

/** The decision input as OPA sees it (DESIGN.md section 2), already normalized (normalizeInput). */
export interface DecisionInput {
  readonly principal: JsonMap;
  readonly action: string;
  readonly resource: JsonMap;
  readonly context: JsonMap;
}

/** Outcome of a condition: false, true or an error. */
export const FALSE = 0;
export const TRUE = 1;
export const ERROR = 2;
export type Truth = typeof FALSE | typeof TRUE | typeof ERROR;

type ValueFn = (input: DecisionInput) => Result;
type CondFn = (input: DecisionInput) => Truth;

function lookup(v: Result, key: string | number): Result {
  if (v === ERR) return ERR;
  if (typeof key === 'number') {
    if (!Array.isArray(v)) return ERR;
    return key < v.length ? (v[key] as Json) : ERR;
  }
  if (!isMap(v) || !Object.hasOwn(v, key)) return ERR;
  return v[key] as Json;
}

function compileValue(v: Value): ValueFn {
  switch (v.kind) {
    case 'literal': {
      const value = v.value as Json;
      return () => value;
    }
    case 'path': {
      const { root, keys } = v;
      // Specialised closures for the common depths keep the hot path free of loops.
      if (keys.length === 0) return (input) => input[root];
      if (keys.length === 1) {
        const k0 = keys[0] as string | number;
        if (typeof k0 === 'string' && root !== 'action') {
          return (input) => { const o = input[root] as JsonMap; return Object.hasOwn(o, k0) ? (o[k0] as Json) : ERR; };
        }
        return (input) => lookup(input[root], k0);
      }
      return (input) => {
        let cur: Result = input[root];
        for (const k of keys) { cur = lookup(cur, k); if (cur === ERR) return ERR; }
        return cur;
      };
    }
    case 'size': {
      const arg = compileValue(v.arg);
      return (input) => { const a = arg(input); return a === ERR ? ERR : celSize(a); };
    }
    case 'time': {
      const arg = compileValue(v.arg);
      const part = v.part;
      return (input) => {
        const a = arg(input);
        if (typeof a !== 'string') return ERR;
        const ms = parseTimestamp(a);
        if (ms === undefined) return ERR;
        const d = new Date(ms);
        return part === 'hours' ? d.getUTCHours() : part === 'minutes' ? d.getUTCMinutes() : d.getUTCDay();
      };
    }
  }
}

function truth(b: boolean): Truth {
  return b ? TRUE : FALSE;
}

function compileCond(c: Cond): CondFn {
  switch (c.kind) {
    case 'const': {
      const t = truth(c.value);
      return () => t;
    }
    case 'and': {
      const l = compileCond(c.left);
      const r = compileCond(c.right);
      // CEL: false wins over an error on either side; an error wins over true.
      return (input) => {
        const a = l(input);
        if (a === FALSE) return FALSE;
        const b = r(input);
        if (b === FALSE) return FALSE;
        return a === ERROR || b === ERROR ? ERROR : TRUE;
      };
    }
    case 'or': {
      const l = compileCond(c.left);
      const r = compileCond(c.right);
      return (input) => {
        const a = l(input);
        if (a === TRUE) return TRUE;
        const b = r(input);
        if (b === TRUE) return TRUE;
        return a === ERROR || b === ERROR ? ERROR : FALSE;
      };
    }
    case 'not': {
      const o = compileCond(c.operand);
      return (input) => { const a = o(input); return a === ERROR ? ERROR : a === TRUE ? FALSE : TRUE; };
    }
    case 'bool': {
      const v = compileValue(c.value);
      return (input) => { const a = v(input); return a === true ? TRUE : a === false ? FALSE : ERROR; };
    }
    case 'compare': {
      const l = compileValue(c.left);
      const r = compileValue(c.right);
      const op = c.op;
      if (op === '==' || op === '!=') {
        const want = op === '==';
        return (input) => {
          const a = l(input);
          if (a === ERR) return ERROR;
          const b = r(input);
          if (b === ERR) return ERROR;
          return truth(celEquals(a, b) === want);
        };
      }
      const test = op === '<' ? (n: number) => n < 0 : op === '<=' ? (n: number) => n <= 0 : op === '>' ? (n: number) => n > 0 : (n: number) => n >= 0;
      return (input) => {
        const a = l(input);
        if (a === ERR) return ERROR;
        const b = r(input);
        if (b === ERR) return ERROR;
        const n: number | Err = celCompare(a, b);
        return n === ERR ? ERROR : truth(test(n));
      };
    }
    case 'in': {
      const el = compileValue(c.element);
      const coll = compileValue(c.collection);
      return (input) => {
        const x = el(input);
        if (x === ERR) return ERROR;
        const col = coll(input);
        if (col === ERR) return ERROR;
        const r = celIn(x, col);
        return r === ERR ? ERROR : truth(r);
      };
    }
    case 'string': {
      const t = compileValue(c.target);
      const a = compileValue(c.arg);
      const fn = c.fn;
      return (input) => {
        const s = t(input);
        const p = a(input);
        if (typeof s !== 'string' || typeof p !== 'string') return ERROR;
        return truth(fn === 'startsWith' ? s.startsWith(p) : fn === 'endsWith' ? s.endsWith(p) : s.includes(p));
      };
    }
    case 'cidr': {
      const addr = compileValue(c.address);
      const block = c.cidr;
      return (input) => {
        const a = addr(input);
        if (typeof a !== 'string') return ERROR;
        const ip = parseIp(a);
        return ip ? truth(cidrContains(block, ip)) : ERROR;
      };
    }
  }
}

/** A rule ready for decisions: its condition compiled once. */
export interface CompiledRule {
  readonly model: RuleModel;
  /** `<namespace>/<name>` */
  readonly id: string;
  /** Evaluates the condition; a rule without one is always TRUE. */
  readonly test: CondFn;
}

export function compileRule(model: RuleModel): CompiledRule {
  const cond = model.condition;
  return { model, id: `${model.namespace}/${model.name}`, test: cond ? compileCond(cond) : () => TRUE };
}

/** Compiles a bare condition: for tests and tools that evaluate one expression. */
export function compileConditionFn(cond: Cond): CondFn {
  return compileCond(cond);
}

/** Rules of one tenant, indexed by subject type, action and resource type. */
export interface RuleIndex {
  readonly tenant: string;
  readonly size: number;
  candidates(subjectType: string, action: string, resourceType: string): readonly CompiledRule[];
}

const SEP = '\u0000';

/** Builds the index of one tenant's Enforced rules; candidates come out sorted by rule name. */
export function buildIndex(tenant: string, rules: readonly CompiledRule[]): RuleIndex {
  const byKey = new Map<string, CompiledRule[]>();
  const sorted = [...rules].sort((a, b) => (a.model.name < b.model.name ? -1 : a.model.name > b.model.name ? 1 : 0));
  for (const rule of sorted) {
    for (const action of rule.model.actions) {
      const key = rule.model.subjectType + SEP + action + SEP + rule.model.resourceType;
      const list = byKey.get(key);
      if (list) list.push(rule); else byKey.set(key, [rule]);
    }
  }
  const none: readonly CompiledRule[] = [];
  return {
    tenant,
    size: sorted.length,
    candidates: (subjectType, action, resourceType) => byKey.get(subjectType + SEP + action + SEP + resourceType) ?? none,
  };
}

/** A decision: allow or deny, which policy decided, and why, in words a person reads. */
export interface Decision {
  readonly allow: boolean;
  /** `<namespace>/<rule>` of the allowing rule, or the tenant (its policy set) on deny. */
  readonly policyId: string;
  readonly reasons: readonly string[];
}

function typeOf(v: Json | undefined): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Decides a request: allowed when one candidate rule's condition is true (rules tried by name). */
export function decide(index: RuleIndex, input: DecisionInput): Decision {
  const subjectType = input.principal['type'];
  const resourceType = input.resource['type'];
  const candidates = typeof subjectType === 'string' && typeof resourceType === 'string'
    ? index.candidates(subjectType, input.action, resourceType)
    : [];
  for (const rule of candidates) {
    if (rule.test(input) === TRUE) {
      const what = rule.model.description ? `: ${rule.model.description}` : '';
      return { allow: true, policyId: rule.id, reasons: [`Rule ${rule.id} allowed the request${what}`] };
    }
  }
  return { allow: false, policyId: index.tenant, reasons: explainDeny(index, input, candidates, subjectType, resourceType) };
}

/** Names of every candidate rule whose condition is true, sorted. */
export function matchingRules(index: RuleIndex, input: DecisionInput): string[] {
  const subjectType = input.principal['type'];
  const resourceType = input.resource['type'];
  if (typeof subjectType !== 'string' || typeof resourceType !== 'string') return [];
  return index.candidates(subjectType, input.action, resourceType).filter((r) => r.test(input) === TRUE).map((r) => r.model.name);
}

// Only runs on deny, so it may walk the rules again to say what each one needed.
function explainDeny(
  index: RuleIndex, input: DecisionInput, candidates: readonly CompiledRule[], subjectType: Json | undefined, resourceType: Json | undefined,
): string[] {
  if (candidates.length === 0) {
    return [`No Enforced rule in ${index.tenant} lets a ${typeOf(subjectType)} ${JSON.stringify(input.action)} a ${typeOf(resourceType)}`];
  }
  return candidates.map((rule) => {
    const outcome = rule.test(input);
    if (outcome === FALSE) return `Rule ${rule.id} did not match: its condition ${rule.model.conditionText ?? ''} is false`;
    const missing = [...new Set(pathsOf(rule.model.condition).filter((p) => compileValue(p)(input) === ERR).map(pathText))];
    const why = missing.length > 0
      ? `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing`
      : 'an operand has a type the operator does not accept';
    return `Rule ${rule.id} did not match: its condition ${rule.model.conditionText ?? ''} could not be evaluated (${why})`;
  });
}
