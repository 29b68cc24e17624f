// A tenant's proposal (docs/rules.md, "Shadow decisions"): its Proposed rules and the names of its
// Enforced rules marked for removal, in the draft; frozen into TenantSnapshot.shadow at publish, the
// Proposed rules' index built again only when they changed.
import { buildIndex, type CompiledRule, type ShadowSet } from '../policy/index.ts';
import type { TenantSnapshot } from './snapshot.ts';
import { tenantDraft, type StoreState, type TenantDraft } from './draft.ts';

/** One rule's part in its tenant's proposal: a Proposed rule (compiled), or a mark on an Enforced rule. */
export type ShadowEntry = { readonly role: 'Proposed'; readonly rule: CompiledRule } | { readonly role: 'Removal' };

const REMOVAL: ShadowEntry = { role: 'Removal' };

/** The rule's part in the draft's proposal (undefined: none). */
export function shadowRule(state: StoreState, t: string, n: string): ShadowEntry | undefined {
  const d = state.tenants.get(t);
  if (!d) return undefined;
  const rule = d.proposed.get(n);
  if (rule) return { role: 'Proposed', rule };
  return d.removals.has(n) ? REMOVAL : undefined;
}

/** Sets or (undefined) takes out a rule's part in its tenant's proposal; nothing is marked changed when it is the same. */
export function setShadowRule(state: StoreState, t: string, n: string, entry: ShadowEntry | undefined): void {
  const existing = state.tenants.get(t);
  if (!existing && entry === undefined) return;
  const d = existing ?? tenantDraft(state, t);
  const proposed = entry?.role === 'Proposed' ? entry.rule : undefined;
  const removal = entry?.role === 'Removal';
  if (d.proposed.get(n) !== proposed) {
    if (proposed) d.proposed.set(n, proposed);
    else d.proposed.delete(n);
    d.proposedChanged = true;
    state.dirty.add(t);
  }
  if (d.removals.has(n) !== removal) {
    if (removal) d.removals.add(n);
    else d.removals.delete(n);
    d.removalsChanged = true;
    state.dirty.add(t);
  }
}

/** Whether the draft holds a proposal. */
export function hasProposal(d: TenantDraft): boolean {
  return d.proposed.size > 0 || d.removals.size > 0;
}

/** The proposal a tenant publishes: the previous one's parts where they did not change; undefined when it has none. */
export function takeShadow(name: string, d: TenantDraft, previous: TenantSnapshot | undefined): ShadowSet | undefined {
  const before = previous?.shadow;
  const proposedChanged = d.proposedChanged || !before;
  const removalsChanged = d.removalsChanged || !before;
  d.proposedChanged = false;
  d.removalsChanged = false;
  if (!hasProposal(d)) return undefined;
  if (before && !proposedChanged && !removalsChanged) return before;
  return {
    proposed: proposedChanged || !before ? buildIndex(name, [...d.proposed.values()]) : before.proposed,
    removals: removalsChanged || !before ? new Set(d.removals) : before.removals,
  };
}
