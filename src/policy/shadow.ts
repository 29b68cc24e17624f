// Shadow decisions, pure (docs/rules.md, "Shadow decisions"): a tenant's proposal, and what one live
// decision would have been under it. The live decision is never changed; the caller counts.
import type { CompiledRule, Decision, DecisionInput, RuleIndex } from './evaluate.ts';
import type { EntityDirectory } from './directory.ts';

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
