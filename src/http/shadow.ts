// Shadow decisions on the decision path (docs/rules.md, "Shadow decisions"): a decision of a tenant
// with a proposal is handed to the ledger after its answer was sent. Whatever the ledger throws stays
// here: logged once per kind of failure, counted, never a 500 and never a changed answer.
import type { Decision, DecisionInput, EntityDirectory, RuleIndex, ShadowSet } from '../policy/index.ts';
import type { ApiDeps } from './deps.ts';

/** Counts one sent decision against the tenant's proposal. */
export type ShadowObserve = (
  tenant: string,
  shadow: ShadowSet,
  live: RuleIndex,
  input: DecisionInput,
  directory: EntityDirectory,
  decision: Decision,
) => void;

/** Kinds of failure logged at most: past this many, failures are only counted. */
const LOGGED_KINDS = 32;

/** The observer of one handler; a no-op when the process keeps no ledger. */
export function createShadowObserver(deps: Pick<ApiDeps, 'shadow' | 'log' | 'metrics'>): ShadowObserve {
  const ledger = deps.shadow;
  if (ledger === undefined) return () => {};
  const logged = new Set<string>();
  return function observeShadow(tenant, shadow, live, input, directory, decision) {
    try {
      ledger.observe(tenant, shadow, live, input, directory, decision);
    } catch (err) {
      deps.metrics.shadowFailures.inc();
      const kind = err instanceof Error ? `${err.name}: ${err.message}` : typeof err;
      if (logged.has(kind) || logged.size >= LOGGED_KINDS) return;
      logged.add(kind);
      deps.log.error({ err, tenant }, 'Failed to count a shadow decision (logged once per kind; the decision was answered)');
    }
  };
}
