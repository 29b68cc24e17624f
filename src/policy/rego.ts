// Rego translator. Each rule becomes one `allow` clause: indexed equality statements for the types
// and action first, then its condition. Conditions are translated through two predicates built from
// the same intermediate form as the native evaluator: "is true" and "is false". Negation swaps them,
// so it is pushed down to guarded comparisons and never becomes Rego's `not` over something that may
// be missing; an error (missing attribute, wrong type) satisfies neither, as in CEL. Every `not` that
// remains lives inside a prelude function whose arguments are already bound and type-checked.
import { runSteps } from './steps.ts';
import type { Cond, Json, Literal, RuleModel, Value } from './model.ts';
import { codePointSorted, EMPTY_DIRECTORY, neededProperties, readKeys, type EntityDirectory } from './directory.ts';
import type { JsonMap } from './values.ts';
import { walkCondition } from './model.ts';
import { compileConditionFn, ERROR, TRUE } from './evaluate.ts';
import { codePointCompare, IP_PATTERN, TIMESTAMP_PATTERN } from './values.ts';

export type RegoVersion = 0 | 1;

export interface TranslateOptions {
  readonly regoVersion: RegoVersion;
  /** Comment lines put at the top of the file (sanitized like every other comment). */
  readonly header?: readonly string[];
  /** The tenant's entity directory: the part the rules read is embedded (directory.ts). */
  readonly directory?: EntityDirectory;
}

/** Rego keywords (v0 and v1) that cannot follow a dot in a reference. */
const KEYWORDS = new Set([
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

// ---------------------------------------------------------------------------------------------
// Prelude: the fixed helper functions a policy may use, emitted only when used, in this order.

type PreludeName =
  | 'acl_ordered'
  | 'acl_size'
  | 'acl_in'
  | 'acl_not_in'
  | 'acl_starts_with'
  | 'acl_not_starts_with'
  | 'acl_ends_with'
  | 'acl_not_ends_with'
  | 'acl_contains'
  | 'acl_not_contains'
  | 'acl_ip'
  | 'acl_cidr_contains'
  | 'acl_cidr_excludes'
  | 'acl_timestamp_ns'
  | 'acl_hours'
  | 'acl_minutes'
  | 'acl_weekdays'
  | 'acl_weekday';

interface PreludeEntry {
  /** Head without the `if` keyword, e.g. `acl_in(x, c)` or `acl_size(x) = n`. */
  readonly heads: readonly { head: string; body: readonly string[] }[];
  readonly uses: readonly PreludeName[];
  readonly comment: string;
}

const PRELUDE: Record<PreludeName, PreludeEntry> = {
  acl_ordered: {
    comment: 'Ordering is defined between two numbers, two strings or two booleans only.',
    uses: [],
    heads: [
      { head: 'acl_ordered(a, b)', body: ['is_number(a)', 'is_number(b)'] },
      { head: 'acl_ordered(a, b)', body: ['is_string(a)', 'is_string(b)'] },
      { head: 'acl_ordered(a, b)', body: ['is_boolean(a)', 'is_boolean(b)'] },
    ],
  },
  acl_size: {
    comment: 'size(): code points of a string, elements of a list, entries of a map.',
    uses: [],
    heads: [
      { head: 'acl_size(x) = n', body: ['is_string(x)', 'n := count(x)'] },
      { head: 'acl_size(x) = n', body: ['is_array(x)', 'n := count(x)'] },
      { head: 'acl_size(x) = n', body: ['is_object(x)', 'n := count(x)'] },
    ],
  },
  acl_in: {
    comment: 'x in c: an element of a list, or a key of a map (tested as a key, so false and null values count).',
    uses: [],
    heads: [
      { head: 'acl_in(x, c)', body: ['is_array(c)', 'c[_] == x'] },
      { head: 'acl_in(x, c)', body: ['is_object(c)', 'is_string(x)', '_ = c[x]'] },
    ],
  },
  acl_not_in: {
    comment: 'x in c is false: c is a list without x, or a map and x a string that is not a key, a number or a boolean.',
    uses: ['acl_in'],
    heads: [
      { head: 'acl_not_in(x, c)', body: ['is_array(c)', 'not acl_in(x, c)'] },
      { head: 'acl_not_in(x, c)', body: ['is_object(c)', 'is_string(x)', 'not acl_in(x, c)'] },
      { head: 'acl_not_in(x, c)', body: ['is_object(c)', 'is_number(x)'] },
      { head: 'acl_not_in(x, c)', body: ['is_object(c)', 'is_boolean(x)'] },
    ],
  },
  acl_starts_with: {
    comment: 'startsWith is true (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_starts_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'startswith(s, p)'] }],
  },
  acl_not_starts_with: {
    comment: 'startsWith is false (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_not_starts_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'not startswith(s, p)'] }],
  },
  acl_ends_with: {
    comment: 'endsWith is true (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_ends_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'endswith(s, p)'] }],
  },
  acl_not_ends_with: {
    comment: 'endsWith is false (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_not_ends_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'not endswith(s, p)'] }],
  },
  acl_contains: {
    comment: 'contains is true (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_contains(s, p)', body: ['is_string(s)', 'is_string(p)', 'contains(s, p)'] }],
  },
  acl_not_contains: {
    comment: 'contains is false (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_not_contains(s, p)', body: ['is_string(s)', 'is_string(p)', 'not contains(s, p)'] }],
  },
  acl_ip: {
    comment: 'An IP address as Go parses one (IPv4 without leading zeros, IPv6 without zone; not a CIDR block).',
    uses: [],
    heads: [{ head: 'acl_ip(x)', body: ['is_string(x)', `regex.match(\`${IP_PATTERN}\`, x)`] }],
  },
  acl_cidr_contains: {
    comment: 'cidr(c).containsIP(x) is true.',
    uses: ['acl_ip'],
    heads: [{ head: 'acl_cidr_contains(c, x)', body: ['acl_ip(x)', 'net.cidr_contains(c, x)'] }],
  },
  acl_cidr_excludes: {
    comment: 'cidr(c).containsIP(x) is false (x must be an IP address).',
    uses: ['acl_ip'],
    heads: [{ head: 'acl_cidr_excludes(c, x)', body: ['acl_ip(x)', 'not net.cidr_contains(c, x)'] }],
  },
  acl_timestamp_ns: {
    comment: 'Timestamps: strict RFC 3339 (YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM)), years 1678 to 2261, read in UTC.',
    uses: [],
    heads: [
      {
        head: 'acl_timestamp_ns(s) = ns',
        body: ['is_string(s)', `regex.match(\`${TIMESTAMP_PATTERN}\`, s)`, 'ns := time.parse_rfc3339_ns(s)'],
      },
    ],
  },
  acl_hours: {
    comment: 'getHours() in UTC.',
    uses: ['acl_timestamp_ns'],
    heads: [{ head: 'acl_hours(s) = h', body: ['c := time.clock(acl_timestamp_ns(s))', 'h := c[0]'] }],
  },
  acl_minutes: {
    comment: 'getMinutes() in UTC.',
    uses: ['acl_timestamp_ns'],
    heads: [{ head: 'acl_minutes(s) = m', body: ['c := time.clock(acl_timestamp_ns(s))', 'm := c[1]'] }],
  },
  acl_weekdays: { comment: 'getDayOfWeek(): 0 is Sunday.', uses: [], heads: [] },
  acl_weekday: {
    comment: 'getDayOfWeek() in UTC.',
    uses: ['acl_timestamp_ns', 'acl_weekdays'],
    heads: [{ head: 'acl_weekday(s) = d', body: ['d := acl_weekdays[time.weekday(acl_timestamp_ns(s))]'] }],
  },
};
const PRELUDE_ORDER = Object.keys(PRELUDE) as PreludeName[];
const WEEKDAYS = '{"Sunday": 0, "Monday": 1, "Tuesday": 2, "Wednesday": 3, "Thursday": 4, "Friday": 5, "Saturday": 6}';

// ---------------------------------------------------------------------------------------------
// Terms

/**
 * A Rego string literal. Rego strings use JSON's escapes, so JSON.stringify is exact and inert; a
 * byte-order mark is escaped too, because OPA's scanner refuses one anywhere but at the file's start.
 */
export function regoString(s: string): string {
  return JSON.stringify(s.isWellFormed() ? s : s.toWellFormed()).replaceAll('\uFEFF', '\\ufeff');
}

function regoNumber(n: number): string {
  if (!Number.isFinite(n)) throw new Error('numbers in Rego must be finite');
  return Object.is(n, -0) ? '0' : String(n);
}

function regoLiteral(v: Literal): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return regoString(v);
  if (typeof v === 'number') return regoNumber(v);
  if (typeof v === 'boolean') return String(v);
  return `[${v.map(regoLiteral).join(', ')}]`;
}

/** A JSON value as a Rego term: object keys in code point order (the caller sorts Maps). */
function regoJson(v: Json | ReadonlyMap<string, unknown>): string {
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${regoString(k)}: ${regoJson(x as Json)}`).join(', ')}}`;
  const j = v as Json;
  if (j === null || typeof j !== 'object') return regoLiteral(j);
  if (Array.isArray(j)) return `[${j.map(regoJson).join(', ')}]`;
  const keys = Object.keys(j).sort(codePointCompare);
  return `{${keys.map((k) => `${regoString(k)}: ${regoJson((j as Record<string, Json>)[k] as Json)}`).join(', ')}}`;
}

/**
 * Where a condition reads an attribute. With a directory embedded, principal and resource are the
 * merged documents `acl_principal` and `acl_resource`; everything else reads the input.
 */
function regoRef(root: string, keys: readonly (string | number)[], merged = false): string {
  let s = merged && (root === 'principal' || root === 'resource') ? `acl_${root}` : `input.${root}`;
  for (const k of keys) {
    if (typeof k === 'number') s += `[${k}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && !KEYWORDS.has(k)) s += `.${k}`;
    else s += `[${regoString(k)}]`;
  }
  return s;
}

/** Removes anything that could end a comment line early, or that OPA's scanner refuses (a byte-order mark). */
function commentText(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what a Rego comment must not hold.
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\uFEFF]/g, ' ').trimEnd();
}

function commentLines(text: string): string[] {
  return text.split(/\r\n|\r|\n|\u2028|\u2029|\u0085/).map((line) => `# ${commentText(line)}`.trimEnd());
}

// ---------------------------------------------------------------------------------------------
// Predicates: a disjunction of conjunctions of statements. [] never holds; [[]] always holds.

type Conj = readonly string[];
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

function block(v: RegoVersion, head: string, body: Conj): string {
  const open = v === 1 ? `${head.replace(/ = /, ' := ')} if {` : `${head} {`;
  if (body.length === 0) return `${open}\n\ttrue\n}`;
  return `${open}\n${body.map((s) => `\t${s}`).join('\n')}\n}`;
}

/** Identifier prefix for a rule's helpers: `-` becomes `_`, `.` becomes `D` (names are lowercase, so this is one-to-one). */
function helperBase(name: string): string {
  return `rule_${name.replaceAll('-', '_').replaceAll('.', 'D')}`;
}

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
  return { text, prelude: ctx.prelude };
}

function preludeText(used: ReadonlySet<PreludeName>, v: RegoVersion): string[] {
  const all = new Set<PreludeName>();
  const add = (n: PreludeName): void => {
    if (!all.has(n)) {
      all.add(n);
      PRELUDE[n].uses.forEach(add);
    }
  };
  used.forEach(add);
  const out: string[] = [];
  for (const name of PRELUDE_ORDER) {
    if (!all.has(name)) continue;
    const entry = PRELUDE[name];
    const parts: string[] = entry.comment ? [`# ${entry.comment}`] : [];
    if (name === 'acl_weekdays') parts.push(`acl_weekdays ${v === 1 ? ':=' : '='} ${WEEKDAYS}`);
    for (const { head, body } of entry.heads) parts.push(block(v, head, body));
    out.push(parts.join('\n'));
  }
  return out;
}

/**
 * The directory section: the data the rules read, and principal and resource merged from the input
 * and that data (the input's keys win). Empty when the rules read nothing the directory has.
 * Kept per directory object and the properties read, so a rule edit that reads nothing new does
 * not print a large directory again.
 */
function* directorySection(
  rules: readonly RuleModel[],
  directory: EntityDirectory,
  v: RegoVersion,
): Generator<void, (readonly string[])[]> {
  if (directory.size === 0) return [];
  const needed = neededProperties(rules);
  const signature = `${v}|${JSON.stringify([...needed].map(([t, k]) => [t, k === 'all' ? 'all' : [...k].sort()]).sort())}`;
  let byNeed = SECTIONS.get(directory);
  const known = byNeed?.get(signature);
  if (known) return known;
  // The section as parts: a 500,000-entity directory is 15 MB of text, never one string on this thread.
  const typeParts: string[] = [];
  let n = 0;
  for (const type of codePointSorted(needed.keys())) {
    const keys = needed.get(type) as Set<string> | 'all';
    const keysKey = keys === 'all' ? 'all' : [...keys].sort().join('\u0000');
    const lines: string[] = [];
    for (const id of directory.ids(type)) {
      if (++n % 512 === 0) yield;
      const props = directory.get(type, id) as JsonMap;
      // An entity's line is kept with its properties object, which a Directory edit elsewhere leaves as it was.
      const cached = ENTITY_LINES.get(props);
      let line = cached && cached.id === id && cached.keys === keysKey ? cached.line : undefined;
      if (line === undefined) {
        const names = readKeys(props, keys);
        line = names.length === 0 ? null : `\t\t${regoString(id)}: ${regoJson(new Map(names.map((k) => [k, props[k] as Json])))}`;
        ENTITY_LINES.set(props, { id, keys: keysKey, line });
      }
      if (line !== null) lines.push(line);
    }
    if (lines.length > 0)
      typeParts.push(`${typeParts.length > 0 ? ',\n' : ''}\t${regoString(type)}: {\n`, ...(yield* groupSteps(lines, ',\n')), '\n\t}');
    yield;
  }
  if (typeParts.length === 0) return [];
  const eq = v === 1 ? ':=' : '=';
  const merge = (root: 'principal' | 'resource'): string[] => [
    block(v, `acl_${root}[k] = x`, [`x := input.${root}[k]`]),
    block(v, `acl_${root}[k] = x`, [`x := acl_directory[input.${root}.type][input.${root}.id][k]`, `not acl_has_key(input.${root}, k)`]),
  ];
  const section = [
    [
      `# Entity directory: the properties these rules read of the entities listed by Directory resources.\nacl_directory ${eq} {\n`,
      ...typeParts,
      '\n}',
    ],
    [
      [
        "# principal and resource as the rules read them: the request's attributes, and for a known entity",
        '# its directory properties under them (a key the request gives wins, whole).',
        ...merge('principal'),
        ...merge('resource'),
        block(v, 'acl_has_key(o, k)', ['_ = o[k]']),
      ].join('\n'),
    ],
  ];
  if (!byNeed) {
    byNeed = new Map();
    SECTIONS.set(directory, byNeed);
  }
  byNeed.set(signature, section);
  return section;
}

/**
 * lines.join(separator) as parts of 4,096 lines each (the separator between parts included), with a
 * yield between them: 500,000 lines take 30 ms to join at once.
 */
function* groupSteps(lines: readonly string[], separator: string): Generator<void, string[]> {
  const groups: string[] = [];
  for (let i = 0; i < lines.length; i += 4096) {
    groups.push(`${i > 0 ? separator : ''}${lines.slice(i, i + 4096).join(separator)}`);
    yield;
  }
  return groups;
}

/** Each entity's line in the directory section, by its properties object (null: nothing read). */
const ENTITY_LINES = new WeakMap<JsonMap, { readonly id: string; readonly keys: string; readonly line: string | null }>();

/** Directory sections already printed, by directory and the properties read (directories are immutable). */
const SECTIONS = new WeakMap<EntityDirectory, Map<string, (readonly string[])[]>>();
/** Each rule's translation, by rule (rule models are immutable) and `<regoVersion>|<merged>`. */
const TRANSLATED = new WeakMap<RuleModel, Map<string, RuleRego>>();

function translateCached(rule: RuleModel, v: RegoVersion, merged: boolean): RuleRego {
  let byOptions = TRANSLATED.get(rule);
  if (!byOptions) {
    byOptions = new Map();
    TRANSLATED.set(rule, byOptions);
  }
  const key = `${v}|${merged}`;
  let t = byOptions.get(key);
  if (!t) {
    t = translateRule(rule, v, merged);
    byOptions.set(key, t);
  }
  return t;
}

/**
 * The whole `policy.rego` as steps (each a rule or a slice of the directory) a caller may spread
 * over several turns of the event loop; translate() runs them at once. Rules already translated
 * (the same rule object, with the same options) are not translated again.
 */
export function* translateSteps(rules: readonly RuleModel[], options: TranslateOptions): Generator<void, string> {
  return (yield* translatePartsSteps(rules, options)).join('');
}

/**
 * `policy.rego` as parts whose concatenation is the file (translateSteps joins them): a caller that
 * sends the text elsewhere (the packing thread) never makes one large string on this thread.
 */
export function* translatePartsSteps(rules: readonly RuleModel[], options: TranslateOptions): Generator<void, string[]> {
  const v = options.regoVersion;
  const byName = (a: RuleModel, b: RuleModel): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  // Callers usually pass rules already in name order (the store keeps them so): not sorted again.
  const sorted = rules.every((r, i) => i === 0 || byName(rules[i - 1] as RuleModel, r) < 0) ? rules : [...rules].sort(byName);
  yield;
  const directory = yield* directorySection(sorted, options.directory ?? EMPTY_DIRECTORY, v);
  const used = new Set<PreludeName>();
  const clauses: string[] = [];
  const groups: string[] = [];
  for (const r of sorted) {
    const t = translateCached(r, v, directory.length > 0);
    for (const n of t.prelude) used.add(n);
    clauses.push(t.text);
    if (clauses.length === 256) {
      groups.push(`${clauses.join('\n\n')}\n\n`);
      clauses.length = 0;
      yield;
    }
  }
  if (clauses.length > 0) groups.push(`${clauses.join('\n\n')}\n\n`);
  const header = (options.header ?? []).flatMap(commentLines);
  const parts: string[] = [
    `${[...header, 'package acl', ...(v === 1 ? ['', 'import rego.v1'] : [])].join('\n')}\n\n`,
    `default allow ${v === 1 ? ':=' : '='} false\n\n`,
    ...groups,
  ];
  for (const section of directory) parts.push(...section, '\n\n');
  const prelude = preludeText(used, v);
  if (prelude.length > 0) parts.push(prelude.join('\n\n'));
  // The sections are joined by blank lines and the file ends with one newline.
  const last = parts.length - 1;
  if (prelude.length === 0) parts[last] = (parts[last] as string).replace(/\n\n$/, '');
  parts.push('\n');
  return parts;
}

/** The whole `policy.rego` for a set of rules: package acl, default deny, one clause per rule sorted by name. */
export function translate(rules: readonly RuleModel[], options: TranslateOptions): string {
  return runSteps(translateSteps(rules, options));
}
