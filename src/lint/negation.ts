// Paths a condition reads only beneath a `!`, unguarded: when a request lacks one, the negation is an
// error, not true (docs/rules.md: "`!` keeps errors"), so a rule written as "unless X" never matches
// a request that does not mention X. Pure, over the compiled condition.
import { type Cond, pathText, type Value } from '../policy/index.ts';

/** A path read only under `!`, and the test that would guard it (`"legalHold" in resource`). */
export interface NegatedPath {
  readonly text: string;
  readonly guard: string;
}

type Path = Extract<Value, { kind: 'path' }>;

function pathsIn(v: Value, out: Path[]): void {
  if (v.kind === 'path') out.push(v);
  else if (v.kind === 'size' || v.kind === 'time') pathsIn(v.arg, out);
}

/** The values a condition node reads itself (not those of nested conditions). */
function valuesOf(c: Cond): Value[] {
  switch (c.kind) {
    case 'bool':
      return [c.value];
    case 'compare':
      return [c.left, c.right];
    case 'in':
      return [c.element, c.collection];
    case 'string':
      return [c.target, c.arg];
    case 'cidr':
      return [c.address];
    default:
      return [];
  }
}

/** `"k" in root.a` guards `root.a.k` (and what lies beneath it). */
function guardOf(c: Cond): string | undefined {
  if (c.kind !== 'in' || c.element.kind !== 'literal' || typeof c.element.value !== 'string' || c.collection.kind !== 'path')
    return undefined;
  return pathText({ root: c.collection.root, keys: [...c.collection.keys, c.element.value] });
}

export function negatedOnly(cond: Cond): NegatedPath[] {
  const under = new Map<string, Path>();
  const outside = new Set<string>();
  const guards: string[] = [];
  const walk = (c: Cond, negated: boolean): void => {
    if (c.kind === 'and' || c.kind === 'or') {
      walk(c.left, negated);
      walk(c.right, negated);
      return;
    }
    if (c.kind === 'not') {
      walk(c.operand, true);
      return;
    }
    const guard = guardOf(c);
    if (guard !== undefined) guards.push(guard);
    const paths: Path[] = [];
    for (const v of valuesOf(c)) pathsIn(v, paths);
    for (const p of paths) {
      // The action is always there, and a whole root is never missing.
      if (p.root === 'action' || p.keys.length === 0) continue;
      const text = pathText(p);
      if (negated) under.set(text, p);
      else outside.add(text);
    }
  };
  walk(cond, false);
  const guarded = (text: string): boolean => guards.some((g) => text === g || text.startsWith(`${g}.`) || text.startsWith(`${g}[`));
  return [...under]
    .filter(([text]) => !outside.has(text) && !guarded(text))
    .map(([text, p]) => {
      const last = p.keys[p.keys.length - 1] as string | number;
      const parent = pathText({ root: p.root, keys: p.keys.slice(0, -1) });
      return { text, guard: typeof last === 'number' ? `size(${parent}) > ${last}` : `${JSON.stringify(last)} in ${parent}` };
    });
}
