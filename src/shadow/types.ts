// Shadow decisions (docs/rules.md, "Shadow decisions"): while a tenant has Proposed rules, or Enforced
// rules marked for removal, every live decision is also decided as if the proposal were in force, off
// the answer's path, and counted per rule. This is what one replica counts; status sums replicas.

import type { Decision, DecisionInput, EntityDirectory, RuleIndex, ShadowSet } from '../policy/index.ts';
/** A Proposed rule (would it allow what is denied today?), or an Enforced one marked for removal (would its going deny what is allowed today?). */
export type ShadowRole = 'Proposed' | 'Removal';

/** Marks an Enforced (or Approved) rule as proposed to leave: live traffic then shows what it would stop allowing. Value: the state it is proposed to move to (Suspended, Archived, Draft). */
export const ANNOTATION_PROPOSED_STATE = 'acl.policyagent.dev/proposed-state';

/** Examples kept per rule (the first flips seen; inputs redacted as the decision log is). */
export const SHADOW_EXAMPLES = 3;

export interface ShadowExample {
  /** ISO 8601 */
  readonly time: string;
  /** The decision input, redacted, as JSON text of at most 1,024 characters. */
  readonly input: string;
}

/** One rule's shadow counts on this replica, for the spec it has now (a spec edit starts them again). */
export interface ShadowTally {
  readonly role: ShadowRole;
  /** Live decisions whose subject type, action and resource type the rule covers (its condition was evaluated). */
  readonly evaluated: number;
  /** Of those, how many its condition was true for. */
  readonly matched: number;
  /** Decisions it would have changed: deny → allow (Proposed) or allow → deny (Removal). */
  readonly flips: number;
  /** ms since the epoch; undefined while evaluated is 0. */
  readonly firstMs: number | undefined;
  readonly lastMs: number | undefined;
  readonly lastFlipMs: number | undefined;
  /** The first flips, oldest first, at most SHADOW_EXAMPLES. */
  readonly examples: readonly ShadowExample[];
}

/** One replica's shadow counts: fed by every live decision of a tenant with a proposal, read by status, metrics and peers. */
export interface ShadowLedger {
  /** This process's counting session (`<replica>-<start, base 36>`): status sums sessions, each once. */
  readonly session: string;
  /**
   * Counts one live decision against the tenant's proposal (after the answer was sent): `decision`
   * is what `decide(live, input, directory)` answered. Never throws into the caller's path.
   */
  observe(tenant: string, shadow: ShadowSet, live: RuleIndex, input: DecisionInput, directory: EntityDirectory, decision: Decision): void;
  /** This replica's tally of a rule, under the spec and role it is counted for now (undefined: nothing counted). */
  tally(tenant: string, rule: string): ShadowTally | undefined;
  /** Every tally held (shared with peers, read by metrics). */
  all(): Iterable<{ readonly tenant: string; readonly rule: string; readonly tally: ShadowTally }>;
  /** `<tenant>/<rule>` of the tallies changed since the last call. */
  takeChanged(): string[];
}
