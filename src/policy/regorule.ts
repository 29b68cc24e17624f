// One rule's Rego: its `allow` clause and the helper rules the clause names. The clause holds indexed
// equality statements for the types and action first, then the condition. Conditions are translated
// through two predicates built from the same intermediate form as the native evaluator: "is true"
// and "is false". Negation swaps them, so it is pushed down to guarded comparisons and never becomes
// Rego's `not` over something that may be missing; an error (missing attribute, wrong type)
// satisfies neither, as in CEL. Every `not` that remains lives inside a prelude function whose
// arguments are already bound and type-checked.
import type { Cond, RuleModel, Value } from './model.ts';
import { walkCondition } from './model.ts';
import { compileConditionFn, ERROR, TRUE } from './evaluate.ts';
import type { PreludeName } from './prelude.ts';
import { block, commentLines, regoLiteral, regoRef, regoString, type RegoVersion } from './regotext.ts';

/** A conjunction of statements. */
type Conj = readonly string[];
/** A predicate: a disjunction of conjunctions of statements. [] never holds; [[]] always holds. */
type Pred = readonly Conj[];
const NEVER: Pred = [];
const ALWAYS: Pred = [[]];

interface Ctx {
  readonly v: RegoVersion;
  /** Whether principal and resource are read through the embedded directory. */
  readonly merged: boolean;
  readonly base: string;
  readonly helpers: string[];
  readonly prelude: Set<PreludeName>;
  counter: number;
}

function use(ctx: Ctx, name: PreludeName): string {
  ctx.prelude.add(name);
  return name;
}

function term(ctx: Ctx, v: Value): string {
  switch (v.kind) {
    case 'literal':
      return regoLiteral(v.value);
    // The decision input always has a context ({} when the request has none); an application that
    // leaves it out of its sidecar's input must still get the same answer when a condition reads
    // context as a whole (size(context), "k" in context).
    // The same holds for actionProperties.
    case 'path':
      return (v.root === 'context' || v.root === 'actionProperties') && v.keys.length === 0
        ? `object.get(input, ${regoString(v.root)}, {})`
        : regoRef(v.root, v.keys, ctx.merged);
    case 'size':
      return `${use(ctx, 'acl_size')}(${term(ctx, v.arg)})`;
    case 'time': {
      const fn = v.part === 'hours' ? 'acl_hours' : v.part === 'minutes' ? 'acl_minutes' : 'acl_weekday';
      return `${use(ctx, fn)}(${term(ctx, v.arg)})`;
    }
  }
}

type StaticType = 'number' | 'string' | 'boolean' | 'null' | 'list' | undefined;

function staticType(v: Value): StaticType {
  if (v.kind === 'size' || v.kind === 'time') return 'number';
  if (v.kind === 'path') return undefined;
  const x = v.value;
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'list';
  return typeof x as 'number' | 'string' | 'boolean';
}

/** Whether a condition reads no attribute at all (so it can be decided while translating). */
function isConstant(c: Cond): boolean {
  let constant = true;
  walkCondition(c, (v) => {
    if (v.kind === 'path') constant = false;
  });
  return constant;
}

/** Turns a disjunction into one statement by naming it as a helper rule of this rule. */
function hoist(ctx: Ctx, p: Pred): Conj {
  if (p.length === 1) return p[0] as Conj;
  const name = `${ctx.base}_${ctx.counter++}`;
  for (const conj of p) ctx.helpers.push(block(ctx.v, name, conj));
  return [name];
}

function and(ctx: Ctx, p: Pred, q: Pred): Pred {
  if (p.length === 0 || q.length === 0) return NEVER;
  return [[...hoist(ctx, p), ...hoist(ctx, q)]];
}

function or(p: Pred, q: Pred): Pred {
  return [...p, ...q];
}

const NEGATED: Record<'<' | '<=' | '>' | '>=', string> = { '<': '>=', '<=': '>', '>': '<=', '>=': '<' };
const TYPE_TEST: Record<'number' | 'string' | 'boolean', string> = { number: 'is_number', string: 'is_string', boolean: 'is_boolean' };

/**
 * The statements under which `c` evaluates to `want` (true or false); errors satisfy neither. Helper
 * rules named while working out a predicate that can never hold are dropped again.
 */
function pred(ctx: Ctx, c: Cond, want: boolean): Pred {
  const helpers = ctx.helpers.length;
  const counter = ctx.counter;
  const p = predicate(ctx, c, want);
  if (p.length === 0) {
    ctx.helpers.length = helpers;
    ctx.counter = counter;
  }
  return p;
}

function predicate(ctx: Ctx, c: Cond, want: boolean): Pred {
  if (c.kind !== 'const' && isConstant(c)) {
    // No attribute is read: decide it now with the evaluator itself.
    const t = compileConditionFn(c)({ principal: {}, resource: {}, context: {}, action: '', actionProperties: {} });
    return t === ERROR ? NEVER : (t === TRUE) === want ? ALWAYS : NEVER;
  }
  switch (c.kind) {
    case 'const':
      return c.value === want ? ALWAYS : NEVER;
    case 'and':
      return want ? and(ctx, pred(ctx, c.left, true), pred(ctx, c.right, true)) : or(pred(ctx, c.left, false), pred(ctx, c.right, false));
    case 'or':
      return want ? or(pred(ctx, c.left, true), pred(ctx, c.right, true)) : and(ctx, pred(ctx, c.left, false), pred(ctx, c.right, false));
    case 'not':
      return pred(ctx, c.operand, !want);
    case 'bool':
      return [[`${term(ctx, c.value)} == ${String(want)}`]];
    case 'compare': {
      const l = term(ctx, c.left);
      const r = term(ctx, c.right);
      if (c.op === '==' || c.op === '!=') return [[`${l} ${(c.op === '==') === want ? '==' : '!='} ${r}`]];
      const lt = staticType(c.left);
      const rt = staticType(c.right);
      const ordered = (t: StaticType): t is 'number' | 'string' | 'boolean' => t === 'number' || t === 'string' || t === 'boolean';
      let guards: string[];
      if (lt !== undefined && rt !== undefined) {
        if (lt !== rt || !ordered(lt)) return NEVER;
        guards = [];
      } else if (lt !== undefined) {
        if (!ordered(lt)) return NEVER;
        guards = [`${TYPE_TEST[lt]}(${r})`];
      } else if (rt !== undefined) {
        if (!ordered(rt)) return NEVER;
        guards = [`${TYPE_TEST[rt]}(${l})`];
      } else {
        guards = [`${use(ctx, 'acl_ordered')}(${l}, ${r})`];
      }
      return [[...guards, `${l} ${want ? c.op : NEGATED[c.op]} ${r}`]];
    }
    case 'in':
      return [[`${use(ctx, want ? 'acl_in' : 'acl_not_in')}(${term(ctx, c.element)}, ${term(ctx, c.collection)})`]];
    case 'string': {
      const name = ({ startsWith: 'starts_with', endsWith: 'ends_with', contains: 'contains' } as const)[c.fn];
      return [[`${use(ctx, `acl_${want ? '' : 'not_'}${name}` as PreludeName)}(${term(ctx, c.target)}, ${term(ctx, c.arg)})`]];
    }
    case 'cidr':
      return [[`${use(ctx, want ? 'acl_cidr_contains' : 'acl_cidr_excludes')}(${regoString(c.cidr.text)}, ${term(ctx, c.address)})`]];
  }
}

/** Identifier prefix for a rule's helpers: `-` becomes `_`, `.` becomes `D` (names are lowercase, so this is one-to-one). */
function helperBase(name: string): string {
  return `rule_${name.replaceAll('-', '_').replaceAll('.', 'D')}`;
}

/** The prelude of a rule that needs none: one set shared by all of them (read-only by type). */
const NO_PRELUDE: ReadonlySet<PreludeName> = new Set();

/** The Rego of one rule: a comment, its `allow` clause and the helper rules the clause names. */
export interface RuleRego {
  readonly text: string;
  readonly prelude: ReadonlySet<PreludeName>;
}

/**
 * Translates one rule into its `allow` clause (and helper rules). `merged`: principal and resource
 * attributes are read from `acl_principal` and `acl_resource` (a bundle with directory data).
 */
export function translateRule(rule: RuleModel, regoVersion: RegoVersion, merged = false): RuleRego {
  const ctx: Ctx = { v: regoVersion, merged, base: helperBase(rule.name), helpers: [], prelude: new Set(), counter: 0 };
  const body: string[] = [`input.principal.type == ${regoString(rule.subjectType)}`];
  if (rule.actions.length === 1) body.push(`input.action == ${regoString(rule.actions[0] as string)}`);
  else if (regoVersion === 1) body.push(`input.action in {${rule.actions.map(regoString).join(', ')}}`);
  else body.push(`input.action == [${rule.actions.map(regoString).join(', ')}][_]`);
  body.push(`input.resource.type == ${regoString(rule.resourceType)}`);
  if (rule.condition) {
    const p = pred(ctx, rule.condition, true);
    body.push(...(p.length === 0 ? ['false'] : hoist(ctx, p)));
  }
  const lines = [`# Rule ${rule.name}`];
  if (rule.description) lines.push(...commentLines(rule.description));
  if (rule.conditionText) lines.push(...commentLines(`Condition: ${rule.conditionText}`));
  const text = [lines.join('\n'), block(regoVersion, 'allow', body), ...ctx.helpers].join('\n');
  return { text, prelude: ctx.prelude.size === 0 ? NO_PRELUDE : ctx.prelude };
}
