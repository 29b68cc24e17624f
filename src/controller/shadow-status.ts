// status.shadow of a Rule (docs/rules.md, "Shadow decisions"): which role the rule plays in its
// tenant's proposal, and its counts summed over replicas by deps.shadow.
import type { RuleShadowStatus, RuleSpec } from '../api/index.ts';
import { ANNOTATION_PROPOSED_STATE, type ShadowRole } from '../shadow/index.ts';
import type { ReconcileDeps } from './deps.ts';
import type { SourceObject } from './types.ts';

/** The states a rule marked for removal may be proposed to move to: those that leave Enforced. */
const LEAVING = new Set(['Suspended', 'Archived', 'Draft']);

/** The rule's role in its tenant's proposal (an ignored mark is said in Ready by the draft's side, rule.ts). */
export function shadowRoleOf(obj: SourceObject, state: RuleSpec['state']): ShadowRole | undefined {
  if (state === 'Proposed') return 'Proposed';
  const mark = obj.metadata.annotations?.[ANNOTATION_PROPOSED_STATE];
  return (state === 'Enforced' || state === 'Approved') && mark !== undefined && LEAVING.has(mark) ? 'Removal' : undefined;
}

/** status.shadow for a translated rule with this role; absent when it has none, or nothing counts (offline). */
export function shadowStatusPart(
  deps: ReconcileDeps,
  obj: SourceObject,
  role: ShadowRole | undefined,
  generation: number,
  recorded: RuleShadowStatus | undefined,
): { shadow?: RuleShadowStatus } {
  const shadow = deps.shadow?.statusOf(obj.metadata.namespace ?? '', obj.metadata.name, role, generation, recorded);
  return shadow === undefined ? {} : { shadow };
}
