// Native evaluator: every condition is compiled once into closures (closures.ts; no tree walking per
// request), and rules are indexed by subject type, action and resource type so a decision touches
// only the rules that can match.
import { runSteps } from './steps.ts';
import {
  compileReader,
  compileShape,
  constantsOf,
  ERROR,
  FALSE,
  TRUE,
  type CondFn,
  type Constants,
  type DecisionInput,
} from './closures.ts';
import { EMPTY_DIRECTORY, withDirectory, type EntityDirectory } from './directory.ts';
import type { Json, RuleModel } from './model.ts';
import { pathText, pathsOf } from './model.ts';
import { ERR, type Result } from './values.ts';

export { compileConditionFn, ERROR, TRUE, type DecisionInput } from './closures.ts';

/** A rule ready for decisions: its condition compiled once. */
export interface CompiledRule {
  readonly model: RuleModel;
  /** `<namespace>/<name>` */
  readonly id: string;
  /** The condition's shape (shared between rules) and this rule's constants: `shape(input, constants)`. */
  readonly shape: CondFn;
  readonly constants: Constants;
  /** The reasons of a decision this rule allows, built once. */
  readonly allowReasons: readonly string[];
  /** The reason given when its condition is false, built once. */
  readonly falseReason: string;
  /** The attribute paths the condition reads, with their readers: used to explain a deny. */
  readonly reads: readonly { readonly text: string; readonly read: (input: DecisionInput) => Result }[];
}

const ALWAYS: CondFn = () => TRUE;
const NO_CONSTANTS: Constants = [];

export function compileRule(model: RuleModel): CompiledRule {
  const cond = model.condition;
  const id = `${model.namespace}/${model.name}`;
  const paths = new Map(pathsOf(cond).map((p) => [pathText(p), p]));
  return {
    model,
    id,
    shape: cond ? compileShape(cond) : ALWAYS,
    constants: cond ? constantsOf(cond) : NO_CONSTANTS,
    allowReasons: Object.freeze([`Rule ${id} allowed the request${model.description ? `: ${model.description}` : ''}`]),
    falseReason: `Rule ${id} did not match: its condition ${model.conditionText ?? ''} is false`,
    reads: [...paths].map(([text, p]) => ({ text, read: compileReader(p) })),
  };
}

/** Whether a rule's condition is true for an input (types and action are the index's business). */
export function testRule(rule: CompiledRule, input: DecisionInput): boolean {
  return rule.shape(input, rule.constants) === TRUE;
}

/** Rules of one tenant, indexed by subject type, action and resource type. */
export interface RuleIndex {
  readonly tenant: string;
  readonly size: number;
  /** Every rule of the index, by name. */
  readonly rules: readonly CompiledRule[];
  candidates(subjectType: string, action: string, resourceType: string): readonly CompiledRule[];
  /** The same candidates as stored: a lone rule directly (one object less to read per decision). */
  slot(subjectType: string, action: string, resourceType: string): CompiledRule | readonly CompiledRule[] | undefined;
}

/** Key spaces up to this size may be a plain array (one load); larger ones are a Map. */
const DIRECT_LIMIT = 1 << 20;
/**
 * ...and only while the array is not mostly holes: at most this many slots per occupied key (or
 * DIRECT_FLOOR in all). 100 tenants of 100 rules over 50 subject types, 20 actions and 100 resource
 * types held 100 arrays of 100,000 slots for a few hundred keys each: 4.2 KiB per rule (issue 26).
 */
const DIRECT_PER_KEY = 16;
const DIRECT_FLOOR = 4096;

/**
 * Builds the index of one tenant's Enforced rules; candidates come out sorted by rule name. Subject
 * types, actions and resource types are numbered through three small maps that every request
 * touches (so they stay in the CPU cache); the rules sit in one table keyed by the combined number.
 */
export function buildIndex(tenant: string, rules: readonly CompiledRule[]): RuleIndex {
  return runSteps(buildIndexSteps(tenant, rules));
}

/** JSON of a constants array (arrays are never changed once compiled). */
const CONSTANTS_KEY = new WeakMap<Constants, string>();
/** A rule with its constants replaced by an equal shared array, as the last index made it. */
const SHARED_COPY = new WeakMap<CompiledRule, CompiledRule>();

/**
 * The rule with its constants replaced by an equal array already in `sets` (added when new), so
 * rules of an index with equal constants share one array. The copy is kept per rule and array: a
 * rebuild or an update allocates nothing new for a rule that did not change.
 */
function shareConstants(rule: CompiledRule, sets: Map<string, Constants>): CompiledRule {
  if (rule.constants.length === 0) return rule;
  let key = CONSTANTS_KEY.get(rule.constants);
  if (key === undefined) {
    key = JSON.stringify(rule.constants);
    CONSTANTS_KEY.set(rule.constants, key);
  }
  const known = sets.get(key);
  if (known === undefined) {
    sets.set(key, rule.constants);
    return rule;
  }
  if (known === rule.constants) return rule;
  const copy = SHARED_COPY.get(rule);
  if (copy?.constants === known) return copy;
  const made = { ...rule, constants: known };
  SHARED_COPY.set(rule, made);
  return made;
}

/** Rules in name order. */
export function byRuleName(a: CompiledRule, b: CompiledRule): number {
  return a.model.name < b.model.name ? -1 : a.model.name > b.model.name ? 1 : 0;
}

/** buildIndex as steps of a few hundred rules each, for a caller that spreads it over turns of the event loop. */
export function* buildIndexSteps(tenant: string, rules: readonly CompiledRule[]): Generator<void, RuleIndex> {
  const sorted = [...rules].sort(byRuleName);
  yield;
  const subjects = new Map<string, number>();
  const actions = new Map<string, number>();
  const resources = new Map<string, number>();
  const number = (m: Map<string, number>, k: string): number => {
    let n = m.get(k);
    if (n === undefined) {
      n = m.size;
      m.set(k, n);
    }
    return n;
  };
  for (const r of sorted) {
    number(subjects, r.model.subjectType);
    for (const a of r.model.actions) number(actions, a);
    number(resources, r.model.resourceType);
  }
  const na = actions.size;
  const nr = resources.size;
  const space = subjects.size * na * nr;
  // Rules of this index with equal constants share one array: a tenant that repeats a condition
  // then reads one constants array per decision, which stays in the CPU cache, instead of one per rule.
  const constantSets = new Map<string, Constants>();
  const shared: CompiledRule[] = [];
  for (const rule of sorted) {
    if (shared.length % 512 === 0) yield;
    shared.push(shareConstants(rule, constantSets));
  }
  const table = new Map<number, CompiledRule[]>();
  let placed = 0;
  for (const rule of shared) {
    if (++placed % 512 === 0) yield;
    const s = subjects.get(rule.model.subjectType) as number;
    const r = resources.get(rule.model.resourceType) as number;
    for (const action of rule.model.actions) {
      const key = (s * na + (actions.get(action) as number)) * nr + r;
      const list = table.get(key);
      if (list) list.push(rule);
      else table.set(key, [rule]);
    }
  }
  const slots = new Map<number, Slot>();
  for (const [key, list] of table) slots.set(key, list.length === 1 ? list[0] : list);
  let direct: Slot[] | undefined;
  if (space <= DIRECT_LIMIT && space <= Math.max(DIRECT_FLOOR, DIRECT_PER_KEY * slots.size)) {
    direct = new Array<Slot>(space).fill(undefined);
    for (const [key, found] of slots) direct[key] = found;
  }
  // With the array, the map is not read again (updates copy the array), so it is not kept.
  return makeIndex(tenant, {
    subjects,
    actions,
    resources,
    na,
    nr,
    slots: direct ? EMPTY_SLOTS : slots,
    direct,
    constantSets,
    rules: shared,
  });
}

/** What an index is made of, kept so that a few changed rules update it instead of rebuilding it. */
interface IndexParts {
  readonly subjects: ReadonlyMap<string, number>;
  readonly actions: ReadonlyMap<string, number>;
  readonly resources: ReadonlyMap<string, number>;
  readonly na: number;
  readonly nr: number;
  /** The slots by key, when there is no `direct` array. */
  readonly slots: ReadonlyMap<number, Slot>;
  /** The slots as one array when the key space is small enough (one load per decision). */
  readonly direct: readonly Slot[] | undefined;
  readonly constantSets: ReadonlyMap<string, Constants>;
  /** Every rule, by name. */
  readonly rules: readonly CompiledRule[];
}

const PARTS = new WeakMap<RuleIndex, IndexParts>();
const EMPTY_SLOTS: ReadonlyMap<number, Slot> = new Map();

function makeIndex(tenant: string, parts: IndexParts): RuleIndex {
  const { subjects, actions, resources, na, nr, slots, direct } = parts;
  const get: (key: number) => Slot = direct ? (key) => direct[key] : (key) => slots.get(key);
  const slot = (subjectType: string, action: string, resourceType: string): Slot => {
    const s = subjects.get(subjectType);
    const a = actions.get(action);
    const r = resources.get(resourceType);
    if (s === undefined || a === undefined || r === undefined) return undefined;
    return get((s * na + a) * nr + r);
  };
  const index: RuleIndex = {
    tenant,
    size: parts.rules.length,
    rules: parts.rules,
    slot,
    candidates: (subjectType, action, resourceType) => listOf(slot(subjectType, action, resourceType)),
  };
  PARTS.set(index, parts);
  return index;
}

/** Where `name` is, or would go, in rules sorted by name. */
export function rulePosition(rules: readonly CompiledRule[], name: string): number {
  let lo = 0;
  let hi = rules.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((rules[mid] as CompiledRule).model.name < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The index `previous` would be with the rules named in `changed` replaced by `added` (those of
 * them still deployed): a few slots and one array copied, not every rule placed again. Undefined
 * when an added rule names a subject type, action or resource type the index has no number for
 * (then build it whole). Candidates come out in name order either way.
 */
export function updateIndex(previous: RuleIndex, changed: ReadonlySet<string>, added: readonly CompiledRule[]): RuleIndex | undefined {
  const parts = PARTS.get(previous);
  if (!parts) return undefined;
  const { subjects, actions, resources, na, nr } = parts;
  for (const r of added) {
    if (!subjects.has(r.model.subjectType) || !resources.has(r.model.resourceType) || r.model.actions.some((a) => !actions.has(a)))
      return undefined;
  }
  const constantSets = new Map(parts.constantSets);
  const keysOf = (rule: CompiledRule): number[] => {
    const s = subjects.get(rule.model.subjectType) as number;
    const r = resources.get(rule.model.resourceType) as number;
    return rule.model.actions.map((a) => (s * na + (actions.get(a) as number)) * nr + r);
  };
  // Found by name (binary search), not by a pass over every rule.
  const rules = parts.rules.slice();
  const removed: CompiledRule[] = [];
  for (const name of changed) {
    const at = rulePosition(rules, name);
    const found = rules[at];
    if (found?.model.name === name) {
      removed.push(found);
      rules.splice(at, 1);
    }
  }
  const inserted = added.map((rule) => shareConstants(rule, constantSets));
  for (const rule of inserted) rules.splice(rulePosition(rules, rule.model.name), 0, rule);
  // The slots touched: each one's list again, without the removed rules and with the added ones.
  const touched = new Map<number, CompiledRule[]>();
  const listAt = (key: number): CompiledRule[] => {
    let list = touched.get(key);
    if (!list) {
      list = [...listOf(parts.direct ? parts.direct[key] : parts.slots.get(key))];
      touched.set(key, list);
    }
    return list;
  };
  for (const rule of removed) {
    for (const key of keysOf(rule)) {
      const list = listAt(key);
      const at = list.indexOf(rule);
      if (at >= 0) list.splice(at, 1);
    }
  }
  for (const rule of inserted) {
    for (const key of keysOf(rule)) {
      const list = listAt(key);
      const at = list.findIndex((x) => byRuleName(rule, x) < 0);
      list.splice(at < 0 ? list.length : at, 0, rule);
    }
  }
  const direct = parts.direct ? parts.direct.slice() : undefined;
  const slots = direct ? parts.slots : new Map(parts.slots);
  for (const [key, list] of touched) {
    const value: Slot = list.length === 0 ? undefined : list.length === 1 ? list[0] : list;
    if (direct) direct[key] = value;
    else if (value === undefined) (slots as Map<number, Slot>).delete(key);
    else (slots as Map<number, Slot>).set(key, value);
  }
  return makeIndex(previous.tenant, { ...parts, slots, direct, constantSets, rules });
}

/** A decision: allow or deny, which policy decided, and why, in words a person reads. */
export interface Decision {
  readonly allow: boolean;
  /** `<namespace>/<rule>` of the allowing rule, or the tenant (its policy set) on deny. */
  readonly policyId: string;
  readonly reasons: readonly string[];
  /** The allowing rule (absent on deny). */
  readonly rule?: CompiledRule;
}

function typeOf(v: Json | undefined): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

type Slot = CompiledRule | readonly CompiledRule[] | undefined;

function slotFor(index: RuleIndex, input: DecisionInput): Slot {
  const subjectType = input.principal['type'];
  const resourceType = input.resource['type'];
  if (typeof subjectType !== 'string' || typeof resourceType !== 'string') return undefined;
  return index.slot(subjectType, input.action, resourceType);
}

function isRuleList(slot: CompiledRule | readonly CompiledRule[]): slot is readonly CompiledRule[] {
  return Array.isArray(slot);
}

/** The first rule of a slot (they are in name order) whose condition is true. */
function firstMatch(slot: Slot, input: DecisionInput): CompiledRule | undefined {
  if (slot === undefined) return undefined;
  if (!isRuleList(slot)) return testRule(slot, input) ? slot : undefined;
  for (let i = 0; i < slot.length; i++) {
    const rule = slot[i] as CompiledRule;
    if (testRule(rule, input)) return rule;
  }
  return undefined;
}

function listOf(slot: Slot): readonly CompiledRule[] {
  return slot === undefined ? [] : isRuleList(slot) ? slot : [slot];
}

/**
 * Decides a request: allowed when one candidate rule's condition is true (rules tried by name). The
 * principal and resource are read with their directory properties merged under their own.
 */
export function decide(index: RuleIndex, request: DecisionInput, directory: EntityDirectory = EMPTY_DIRECTORY): Decision {
  const input = withDirectory(request, directory);
  const slot = slotFor(index, input);
  const rule = firstMatch(slot, input);
  if (rule) return { allow: true, policyId: rule.id, reasons: rule.allowReasons, rule };
  return { allow: false, policyId: index.tenant, reasons: explainDeny(index, input, listOf(slot)) };
}

/** Names of every candidate rule whose condition is true, sorted. */
export function matchingRules(index: RuleIndex, request: DecisionInput, directory: EntityDirectory = EMPTY_DIRECTORY): string[] {
  const input = withDirectory(request, directory);
  return listOf(slotFor(index, input))
    .filter((r) => testRule(r, input))
    .map((r) => r.model.name);
}

// Only runs on deny, so it may evaluate the rules again to say what each one needed.
function explainDeny(index: RuleIndex, input: DecisionInput, candidates: readonly CompiledRule[]): string[] {
  if (candidates.length === 0) {
    return [
      `No Enforced rule in ${index.tenant} lets a ${typeOf(input.principal['type'])} ${JSON.stringify(input.action)} a ${typeOf(input.resource['type'])}`,
    ];
  }
  return candidates.map((rule) => {
    const outcome = rule.shape(input, rule.constants);
    if (outcome === FALSE) return rule.falseReason;
    const missing = outcome === ERROR ? rule.reads.filter((p) => p.read(input) === ERR).map((p) => p.text) : [];
    const why =
      missing.length > 0
        ? `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing`
        : 'an operand has a type the operator does not accept';
    return `Rule ${rule.id} did not match: its condition ${rule.model.conditionText ?? ''} could not be evaluated (${why})`;
  });
}
