// A tenant's deployed rules: kept in name order between reads, and their index updated for a few
// changed rules or built whole (ahead of publish, in slices, when a caller prepares it).
import { buildIndex, buildIndexSteps, byRuleName, rulePosition, updateIndex, type CompiledRule, type RuleIndex } from '../policy/index.ts';
import type { TenantSnapshot } from './snapshot.ts';
import { setOrDelete, tenantDraft, type Run, type StoreState, type TenantDraft } from './draft.ts';

const EMPTY_INDEX_RULES: readonly CompiledRule[] = [];

/** `rules` (sorted by name) with the rule named `name` replaced, added or (undefined) removed: a new array. */
function placeByName(rules: readonly CompiledRule[], name: string, rule: CompiledRule | undefined): CompiledRule[] {
  const lo = rulePosition(rules, name);
  const next = rules.slice();
  const present = next[lo]?.model.name === name;
  if (rule === undefined) {
    if (present) next.splice(lo, 1);
  } else next.splice(lo, present ? 1 : 0, rule);
  return next;
}

/** Every deployed rule of a tenant, in name order. */
export function draftRules(state: StoreState, t: string): readonly CompiledRule[] {
  const d = state.tenants.get(t);
  if (!d) return EMPTY_INDEX_RULES;
  // By name, kept between calls: bundles translate rules in name order, and a list already in
  // order is not sorted again.
  d.byNamePlaced = 0;
  d.byName ??= [...d.rules.values()].sort(byRuleName);
  return d.byName;
}

/** Sets or (undefined) removes the deployed rule `<t>/<n>`. */
export function setRule(state: StoreState, t: string, n: string, rule: CompiledRule | undefined): void {
  const d = tenantDraft(state, t);
  setOrDelete(d.rules, n, rule);
  // A few changes are placed (one copy each); many at once sort again when next asked.
  d.byNamePlaced++;
  d.byName = d.byName && d.byNamePlaced <= 64 ? placeByName(d.byName, n, rule) : undefined;
  d.rulesChanged = true;
  d.rulesVersion++;
  d.changedRules.add(n);
  state.dirty.add(t);
}

/** The index updated for the few rules changed since `previous` (undefined: build it whole). */
function updatedIndex(d: TenantDraft, previous: TenantSnapshot | undefined): RuleIndex | undefined {
  if (!previous || d.changedRules.size > Math.max(64, d.rules.size / 8)) return undefined;
  const added = [...d.changedRules].map((n) => d.rules.get(n)).filter((r): r is CompiledRule => r !== undefined);
  return updateIndex(previous.index, d.changedRules, added);
}

/** The index a tenant publishes (prepared, updated or built now); the draft then counts no rule as changed. */
export function takeIndex(name: string, d: TenantDraft, previous: TenantSnapshot | undefined): RuleIndex {
  const prepared = d.prepared?.version === d.rulesVersion ? d.prepared.index : undefined;
  const index =
    d.rulesChanged || !previous ? (prepared ?? updatedIndex(d, previous) ?? buildIndex(name, [...d.rules.values()])) : previous.index;
  d.rulesChanged = false;
  d.changedRules.clear();
  d.prepared = undefined;
  return index;
}

/** Builds the indexes the next publish needs, through `run` (which may spread the work over turns of the event loop). */
export async function prepareIndexes(state: StoreState, run: Run): Promise<void> {
  for (const name of [...state.dirty]) {
    const d = state.tenants.get(name);
    if (!d?.rulesChanged || d.prepared?.version === d.rulesVersion) continue;
    const version = d.rulesVersion;
    const index = updatedIndex(d, state.current.tenants.get(name)) ?? (await run(buildIndexSteps(name, [...d.rules.values()])));
    if (d.rulesVersion === version) d.prepared = { version, index };
  }
}
