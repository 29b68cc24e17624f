// Rule → deployed CompiledRule in the store, and status: phase, conditions and translation.
import { Rule } from '../api/index.ts';
import { describeIssues } from '../api/manifests.ts';
import { compileRule, ruleModel, translateRule, type CompiledRule, type RuleModel } from '../policy/index.ts';
import { conditionsFor } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { ANNOTATION_REGENERATE, keyText, type ObjectKey } from './types.ts';

interface Translated {
  readonly generation: number;
  readonly regenerate: string | undefined;
  readonly model: RuleModel;
  readonly rego: string;
}

/** Approved means "deploy it": it goes into bundles with Enforced ones, and is Enforced once built. */
function deployed(state: RuleModel['state']): boolean {
  return state === 'Enforced' || state === 'Approved';
}

/** A reconcile function for Rules; it remembers each rule's last good translation. */
export function createRuleReconciler(): (key: ObjectKey, deps: ReconcileDeps) => Outcome {
  const lastGood = new Map<string, Translated>();

  return function reconcileRule(key, deps) {
    const { namespace, name } = key;
    const id = keyText(key);
    const obj = deps.objects.get('Rule', namespace, name);
    if (!obj) {
      lastGood.delete(id);
      const had = deps.draft.rule(namespace, name) !== undefined;
      deps.draft.setRule(namespace, name, undefined);
      return had ? { rulesChangedIn: namespace } : {};
    }
    const generation = obj.metadata.generation ?? 0;
    const regenerate = obj.metadata.annotations?.[ANNOTATION_REGENERATE];
    const previous = lastGood.get(id);
    const status = (fields: Record<string, unknown>, conditions: Parameters<typeof conditionsFor>[0]): Record<string, unknown> => ({
      ...fields,
      observedGeneration: generation,
      conditions: conditionsFor(conditions, generation, deps.now(), (obj.raw['status'] as { conditions?: unknown } | undefined)?.conditions),
    });

    // An invalid spec keeps the last good version in force: nothing else changes.
    const invalid = (reason: 'InvalidSpec' | 'TranslationFailed', message: string): Outcome => {
      deps.log.warn({ kind: 'Rule', key: id, reason, problem: message }, 'Rejected Rule');
      const kept = previous
        ? { status: 'Stale', generation: previous.generation, rego: previous.rego, message: `generation ${generation} cannot be translated: ${message}; generation ${previous.generation} stays in force` }
        : { status: 'Error', generation, message };
      return {
        phase: 'Invalid',
        status: status({ phase: 'Invalid', translation: kept }, [{ type: 'Ready', status: false, reason, message }]),
      };
    };

    const parsed = Rule.safeParse(obj.raw);
    if (!parsed.success) return invalid('InvalidSpec', describeIssues(parsed.error));

    let translated = previous;
    if (!previous || previous.generation !== generation || previous.regenerate !== regenerate) {
      const res = ruleModel(parsed.data);
      if (!res.ok) return invalid('TranslationFailed', res.error.message);
      const model: RuleModel = deployed(res.model.state) ? { ...res.model, state: 'Enforced' } : res.model;
      translated = { generation, regenerate, model, rego: translateRule(model, 0).text };
      lastGood.set(id, translated);
      deps.log.info({ kind: 'Rule', key: id, generation, state: res.model.state, ...(regenerate === undefined ? {} : { regenerate }) }, 'Translated Rule');
    }
    const t = translated as Translated;
    const before: CompiledRule | undefined = deps.draft.rule(namespace, name);
    const isDeployed = deployed(parsed.data.spec.state);
    if (isDeployed && before?.model !== t.model) deps.draft.setRule(namespace, name, compileRule(t.model));
    if (!isDeployed && before) deps.draft.setRule(namespace, name, undefined);
    const rulesChangedIn = (isDeployed ? before?.model !== t.model : before !== undefined) ? namespace : undefined;

    const phase = isDeployed ? 'Enforced' : parsed.data.spec.state;
    const message = isDeployed
      ? parsed.data.spec.state === 'Approved'
        ? 'Approved and deployed: decided by the service and built into the bundles that select it'
        : 'Decided by the service and built into the bundles that select it'
      : `State ${phase}: neither decided nor put in bundles`;
    return {
      phase,
      rulesChangedIn,
      status: status(
        { phase, translation: { status: 'Current', generation: t.generation, rego: t.rego, ...(t.regenerate === undefined ? {} : { regenerate: t.regenerate }) } },
        [{ type: 'Ready', status: true, reason: isDeployed ? 'Enforced' : 'NotDeployed', message }],
      ),
    };
  };
}
