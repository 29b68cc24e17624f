// Shadow decisions, pure (docs/rules.md, "Shadow decisions"): a tenant's proposal, and what one live
// decision would have been under it. The live decision is never changed; the caller counts.
import { testRule, type CompiledRule, type Decision, type DecisionInput, type RuleIndex } from './evaluate.ts';
import { withDirectory, type EntityDirectory } from './directory.ts';

/** A tenant's proposal: its Proposed rules, and the Enforced rules marked for removal. */
export interface ShadowSet {
  /** The Proposed rules, indexed as the live rules are. */
  readonly proposed: RuleIndex;
  /** Names of Enforced rules marked for removal (annotation acl.policyagent.dev/proposed-state). */
  readonly removals: ReadonlySet<string>;
}

/** What one live decision says of one rule of the proposal. */
export interface ShadowVisit {
  readonly rule: CompiledRule;
  readonly role: 'Proposed' | 'Removal';
  /** Its condition was true for the input. */
  readonly matched: boolean;
  /** It would have changed the decision: deny → allow (Proposed) or allow → deny (Removal). */
  readonly flipped: boolean;
}

/**
 * Calls `visit` for each rule of the proposal that covers the request's subject type, action and
 * resource type, saying whether it matched and whether it would have changed `live` (the decision
 * `decide(live index, request, directory)` made). Implemented with the shadow work (issue 28).
 */
export type ShadowDecide = (
  live: RuleIndex,
  shadow: ShadowSet,
  request: DecisionInput,
  directory: EntityDirectory,
  decision: Decision,
  visit: (v: ShadowVisit) => void,
) => void;

const NO_RULES: readonly CompiledRule[] = [];

/**
 * What `live`'s decision would have been with the proposal in force, rule by rule (docs/rules.md,
 * "Shadow decisions"): each Proposed candidate flips a deny it matches; each live candidate marked for
 * removal flips an allow when the allowing rule is marked, it matched, and nothing left in force (an
 * unmarked live candidate, a Proposed one) would still allow. Pure: the caller counts.
 */
export const shadowDecide: ShadowDecide = (live, shadow, request, directory, decision, visit) => {
  const input = withDirectory(request, directory);
  const subjectType = input.principal['type'];
  const resourceType = input.resource['type'];
  if (typeof subjectType !== 'string' || typeof resourceType !== 'string') return;
  const slot = shadow.proposed.slot(subjectType, input.action, resourceType);
  let proposedMatch = false;
  if (slot !== undefined) {
    // A lone rule is held as itself (no list to read or make).
    const many = Array.isArray(slot);
    const n = many ? slot.length : 1;
    for (let i = 0; i < n; i++) {
      const rule = many ? (slot[i] as CompiledRule) : (slot as CompiledRule);
      const matched = testRule(rule, input);
      if (matched) proposedMatch = true;
      visit({ rule, role: 'Proposed', matched, flipped: matched && !decision.allow });
    }
  }
  if (shadow.removals.size > 0) visitRemovals(live, shadow.removals, input, subjectType, resourceType, decision, proposedMatch, visit);
};

function visitRemovals(
  live: RuleIndex,
  removals: ReadonlySet<string>,
  input: DecisionInput,
  subjectType: string,
  resourceType: string,
  decision: Decision,
  proposedMatch: boolean,
  visit: (v: ShadowVisit) => void,
): void {
  const slot = live.slot(subjectType, input.action, resourceType);
  const candidates = slot === undefined ? NO_RULES : Array.isArray(slot) ? (slot as readonly CompiledRule[]) : [slot as CompiledRule];
  // The live decision tested the candidates up to the allowing one (the first true, by name): those
  // before it were false, and on a deny every one was. Only those after it are tested again.
  const allowing = decision.allow && decision.rule ? candidates.indexOf(decision.rule) : -1;
  let kept = proposedMatch;
  const marked: { readonly rule: CompiledRule; readonly matched: boolean }[] = [];
  for (let i = 0; i < candidates.length; i++) {
    const rule = candidates[i] as CompiledRule;
    const isMarked = removals.has(rule.model.name);
    if (!isMarked && (kept || i <= allowing)) continue;
    const matched = allowing >= 0 && (i === allowing || (i > allowing && testRule(rule, input)));
    if (isMarked) marked.push({ rule, matched });
    else if (matched) kept = true;
  }
  // The decision flips when the allowing rule goes and nothing left in force allows.
  const flips = allowing >= 0 && removals.has((candidates[allowing] as CompiledRule).model.name) && !kept;
  for (const m of marked) visit({ rule: m.rule, role: 'Removal', matched: m.matched, flipped: flips && m.matched });
}
