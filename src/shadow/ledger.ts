// One replica's shadow counts (docs/rules.md, "Shadow decisions"): every live decision of a tenant
// with a proposal, after its answer was sent, decided again with the proposal in force (shadowDecide)
// and counted per rule. A rule's tally is for the compiled spec and role it has now: a spec edit (a
// new model) or a role change starts it again; a rule that leaves the proposal leaves the ledger.
import { redact } from '../fleet/index.ts';
import {
  rulePosition,
  shadowDecide,
  type CompiledRule,
  type DecisionInput,
  type RuleIndex,
  type RuleModel,
  type ShadowSet,
  type ShadowVisit,
} from '../policy/index.ts';
import { SHADOW_EXAMPLES, type ShadowExample, type ShadowLedger, type ShadowRole, type ShadowTally } from './types.ts';

/** Longest example input kept, in characters of its JSON text (status.shadow.examples). */
export const MAX_EXAMPLE_CHARS = 1024;

/** What a tenant serves now, as the ledger follows it: its live rules and its proposal. */
export interface ServedTenant {
  readonly index: RuleIndex;
  readonly shadow?: ShadowSet | undefined;
}

/** The ledger of this process, with what the process feeds it besides decisions. */
export interface LocalShadowLedger extends ShadowLedger {
  /**
   * The tenant's proposal as just published (undefined: the tenant is gone): tallies of rules that
   * left it are dropped, and of rules whose spec or role changed started again, at once rather than
   * at their next decision (so status and metrics never show a count for a spec no longer counted).
   */
  follow(tenant: string, served: ServedTenant | undefined): void;
}

interface Entry {
  readonly key: string;
  readonly model: RuleModel;
  readonly role: ShadowRole;
  evaluated: number;
  matched: number;
  flips: number;
  firstMs: number | undefined;
  lastMs: number | undefined;
  lastFlipMs: number | undefined;
  readonly examples: ShadowExample[];
  /** In `changed` since the last takeChanged(). */
  changed: boolean;
}

/** The JSON text of an input as the decision log would write it (credentials redacted), cut to MAX_EXAMPLE_CHARS. */
export function exampleText(input: DecisionInput): string {
  const text = JSON.stringify(redact(input)) ?? '';
  if (text.length <= MAX_EXAMPLE_CHARS) return text;
  // Never half a surrogate pair at the cut.
  const end =
    text.charCodeAt(MAX_EXAMPLE_CHARS - 1) >= 0xd800 && text.charCodeAt(MAX_EXAMPLE_CHARS - 1) <= 0xdbff
      ? MAX_EXAMPLE_CHARS - 1
      : MAX_EXAMPLE_CHARS;
  return text.slice(0, end);
}

interface Book {
  readonly tenants: Map<string, Map<string, Entry>>;
  readonly changed: Set<string>;
}

function fresh(tenant: string, model: RuleModel, role: ShadowRole): Entry {
  return {
    key: `${tenant}/${model.name}`,
    model,
    role,
    evaluated: 0,
    matched: 0,
    flips: 0,
    firstMs: undefined,
    lastMs: undefined,
    lastFlipMs: undefined,
    examples: [],
    changed: false,
  };
}

/** What one decision is, for its visits: set before shadowDecide, read by the one visit closure. */
interface Observing {
  rules: Map<string, Entry>;
  tenant: string;
  atMs: number;
  request: DecisionInput | undefined;
}

/** The visit that counts one rule of one decision: a new tally when the rule's spec or role is not the one counted. */
function counter(book: Book, o: Observing): (v: ShadowVisit) => void {
  return function count(v) {
    const { model } = v.rule;
    let e = o.rules.get(model.name);
    if (e === undefined || e.model !== model || e.role !== v.role) {
      e = fresh(o.tenant, model, v.role);
      o.rules.set(model.name, e);
    }
    e.evaluated++;
    if (v.matched) e.matched++;
    e.firstMs ??= o.atMs;
    e.lastMs = o.atMs;
    if (v.flipped) {
      e.flips++;
      e.lastFlipMs = o.atMs;
      if (e.examples.length < SHADOW_EXAMPLES && o.request !== undefined)
        e.examples.push({ time: new Date(o.atMs).toISOString(), input: exampleText(o.request) });
    }
    if (!e.changed) {
      e.changed = true;
      book.changed.add(e.key);
    }
  };
}

function tallyOf(e: Entry): ShadowTally {
  return {
    role: e.role,
    evaluated: e.evaluated,
    matched: e.matched,
    flips: e.flips,
    firstMs: e.firstMs,
    lastMs: e.lastMs,
    lastFlipMs: e.lastFlipMs,
    examples: [...e.examples],
  };
}

/** Drops the tallies of a tenant's rules that left its proposal, or whose spec or role changed. */
function follow(book: Book, tenant: string, served: ServedTenant | undefined): void {
  const held = book.tenants.get(tenant);
  if (held === undefined) return;
  for (const [name, e] of held) {
    if (modelNow(served, name, e.role) === e.model) continue;
    held.delete(name);
    book.changed.add(e.key);
  }
  if (held.size === 0) book.tenants.delete(tenant);
}

/** A ledger for this process: `session` names it in status (`<replica>-<start, base 36>`). */
export function createShadowLedger(options: { readonly replica: string; readonly now: () => number }): LocalShadowLedger {
  const { now } = options;
  const book: Book = { tenants: new Map(), changed: new Set() };
  const observing: Observing = { rules: new Map(), tenant: '', atMs: 0, request: undefined };
  const count = counter(book, observing);
  return {
    session: `${options.replica}-${now().toString(36)}`,
    observe(tenant, shadow, live, input, directory, decision) {
      let held = book.tenants.get(tenant);
      if (held === undefined) {
        held = new Map();
        book.tenants.set(tenant, held);
      }
      observing.rules = held;
      observing.tenant = tenant;
      observing.atMs = now();
      observing.request = input;
      try {
        shadowDecide(live, shadow, input, directory, decision, count);
      } finally {
        observing.request = undefined;
      }
    },
    tally(tenant, rule) {
      const e = book.tenants.get(tenant)?.get(rule);
      return e === undefined ? undefined : tallyOf(e);
    },
    *all() {
      for (const [tenant, held] of book.tenants) for (const [rule, e] of held) yield { tenant, rule, tally: tallyOf(e) };
    },
    takeChanged() {
      const keys = [...book.changed];
      book.changed.clear();
      for (const held of book.tenants.values()) for (const e of held.values()) e.changed = false;
      return keys;
    },
    follow: (tenant, served) => follow(book, tenant, served),
  };
}

/** The model a rule of the proposal is counted for now (undefined: it is not in the proposal in that role). */
function modelNow(served: ServedTenant | undefined, name: string, role: ShadowRole): RuleModel | undefined {
  const shadow = served?.shadow;
  if (!served || !shadow) return undefined;
  if (role === 'Removal') return shadow.removals.has(name) ? byName(served.index.rules, name) : undefined;
  return byName(shadow.proposed.rules, name);
}

function byName(rules: readonly CompiledRule[], name: string): RuleModel | undefined {
  const found = rules[rulePosition(rules, name)];
  return found?.model.name === name ? found.model : undefined;
}
