// The intermediate form of a rule's condition. The CEL front end (cel.ts) produces it; the native
// evaluator (evaluate.ts) and the Rego translator (rego.ts) are both generated from it, so they
// agree by construction. docs/rules.md describes the semantics in prose.

/** A JSON value as it arrives in a decision input. */
export type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json };

/** A constant in a condition: a scalar, or a list of constants. */
export type Literal = string | number | boolean | null | readonly Literal[];

/** The top-level documents of a decision input. */
export type Root = 'principal' | 'resource' | 'context' | 'action' | 'actionProperties';
export const ROOTS: readonly Root[] = ['principal', 'resource', 'context', 'action', 'actionProperties'];

/** Parts of an RFC 3339 timestamp a condition may read, always in UTC. */
export type TimePart = 'hours' | 'minutes' | 'dayOfWeek';

/** An expression that yields a value (or an error). */
export type Value =
  | { readonly kind: 'literal'; readonly value: Literal }
  /** `principal.a.b`, `resource["x-y"]`, `principal.tags[0]`: string keys select map entries, numbers list elements. */
  | { readonly kind: 'path'; readonly root: Root; readonly keys: readonly (string | number)[] }
  /** `size(x)`: code points of a string, elements of a list, entries of a map. */
  | { readonly kind: 'size'; readonly arg: Value }
  /** `timestamp(x).getHours()` and friends. */
  | { readonly kind: 'time'; readonly part: TimePart; readonly arg: Value };

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';
export type StringFn = 'startsWith' | 'endsWith' | 'contains';

/** A parsed CIDR block, kept in canonical text form. */
export interface Cidr {
  readonly text: string;
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** An expression that is true, false or an error. */
export type Cond =
  | { readonly kind: 'const'; readonly value: boolean }
  | { readonly kind: 'and' | 'or'; readonly left: Cond; readonly right: Cond }
  | { readonly kind: 'not'; readonly operand: Cond }
  /** A value used as a condition: true and false are themselves, anything else is an error. */
  | { readonly kind: 'bool'; readonly value: Value }
  | { readonly kind: 'compare'; readonly op: CompareOp; readonly left: Value; readonly right: Value }
  /** `x in c`: element of a list, or key of a map. */
  | { readonly kind: 'in'; readonly element: Value; readonly collection: Value }
  | { readonly kind: 'string'; readonly fn: StringFn; readonly target: Value; readonly arg: Value }
  /** `cidr("10.0.0.0/8").containsIP(x)` */
  | { readonly kind: 'cidr'; readonly cidr: Cidr; readonly address: Value };

/** A rule as the policy module sees it: validated, with its condition compiled. */
export interface RuleModel {
  readonly namespace: string;
  readonly name: string;
  /** spec.state; only Enforced rules decide and go into bundles. */
  readonly state: 'Draft' | 'Proposed' | 'Approved' | 'Enforced' | 'Suspended' | 'Archived';
  readonly description: string | undefined;
  readonly subjectType: string;
  readonly actions: readonly string[];
  readonly resourceType: string;
  /** The condition as written, or undefined when the rule has none. */
  readonly conditionText: string | undefined;
  /** The compiled condition; `undefined` when the rule has no condition. */
  readonly condition: Cond | undefined;
}

/**
 * Visits every value of a condition, and every CIDR block, in one fixed order: left to right, a
 * CIDR block before its address, a value before the values nested in it (size, timestamp). The
 * constants of a compiled condition are numbered in this order (closures.ts).
 */
export function walkCondition(cond: Cond, onValue: (v: Value) => void, onCidr: (c: Cidr) => void = () => {}): void {
  const value = (v: Value): void => {
    onValue(v);
    if (v.kind === 'size' || v.kind === 'time') value(v.arg);
  };
  const walk = (c: Cond): void => {
    switch (c.kind) {
      case 'const':
        return;
      case 'and':
      case 'or':
        walk(c.left);
        walk(c.right);
        return;
      case 'not':
        walk(c.operand);
        return;
      case 'bool':
        value(c.value);
        return;
      case 'compare':
        value(c.left);
        value(c.right);
        return;
      case 'in':
        value(c.element);
        value(c.collection);
        return;
      case 'string':
        value(c.target);
        value(c.arg);
        return;
      case 'cidr':
        onCidr(c.cidr);
        value(c.address);
        return;
    }
  };
  walk(cond);
}

/** Every attribute path a condition reads, for explanations ("principal.team is missing"). */
export function pathsOf(cond: Cond | undefined): Extract<Value, { kind: 'path' }>[] {
  const out: Extract<Value, { kind: 'path' }>[] = [];
  if (cond)
    walkCondition(cond, (v) => {
      if (v.kind === 'path') out.push(v);
    });
  return out;
}

/** `principal.a["x-y"][0]` */
export function pathText(p: { root: Root; keys: readonly (string | number)[] }): string {
  let s: string = p.root;
  for (const k of p.keys) s += typeof k === 'number' ? `[${k}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`;
  return s;
}
