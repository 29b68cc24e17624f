// Rule → deployed CompiledRule in the store, and status: phase, conditions and translation.
import { Rule, RuleSpec } from '../api/index.ts';
import { describeIssues } from '../api/manifests.ts';
import { canonicalJson } from '../bundle/index.ts';
import { compileRule, ruleModel, translateRule, type RuleModel } from '../policy/index.ts';
import { conditionsFor } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { ANNOTATION_REGENERATE, keyText, type ObjectKey, type SourceObject } from './types.ts';

interface Translated {
  /** The spec it was made from, and that spec as canonical JSON (the cache key, with regenerate). */
  readonly spec: RuleSpec;
  readonly specKey: string;
  readonly regenerate: string | undefined;
  /** The generation whose spec this is (the latest one with that spec). */
  readonly generation: number;
  readonly model: RuleModel;
  readonly rego: string;
}

/** Approved means "deploy it": it goes into bundles with Enforced ones, and is Enforced once built. */
function deployed(state: RuleModel['state']): boolean {
  return state === 'Enforced' || state === 'Approved';
}

function translate(
  obj: SourceObject,
  spec: RuleSpec,
  generation: number,
  regenerate: string | undefined,
): Translated | { error: string; reason: 'InvalidSpec' | 'TranslationFailed' } {
  const res = ruleModel({ apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Rule', metadata: obj.metadata, spec });
  // A condition that is not CEL is an invalid spec; valid CEL outside our subset cannot be translated.
  if (!res.ok) return { error: res.error.message, reason: res.error.kind === 'syntax' ? 'InvalidSpec' : 'TranslationFailed' };
  const model: RuleModel = deployed(res.model.state) ? { ...res.model, state: 'Enforced' } : res.model;
  return { spec, specKey: canonicalJson(spec), regenerate, generation, model, rego: translateRule(model, 0).text };
}

/**
 * After a restart, the last good version of a rule whose spec is now invalid comes from its status:
 * the translation records the spec it was made from.
 */
function recorded(obj: SourceObject): Translated | undefined {
  const t = (obj.raw['status'] as { translation?: { status?: unknown; generation?: unknown; spec?: unknown } } | undefined)?.translation;
  if (!t || (t.status !== 'Current' && t.status !== 'Stale') || typeof t.generation !== 'number') return undefined;
  const spec = RuleSpec.safeParse(t.spec);
  if (!spec.success) return undefined;
  const made = translate(obj, spec.data, t.generation, undefined);
  return 'error' in made ? undefined : made;
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
      return had ? { rebuildIn: namespace } : {};
    }
    const generation = obj.metadata.generation ?? 0;
    const regenerate = obj.metadata.annotations?.[ANNOTATION_REGENERATE];
    const status = (fields: Record<string, unknown>, conditions: Parameters<typeof conditionsFor>[0]): Record<string, unknown> => ({
      ...fields,
      observedGeneration: generation,
      conditions: conditionsFor(
        conditions,
        generation,
        deps.now(),
        (obj.raw['status'] as { conditions?: unknown } | undefined)?.conditions,
      ),
    });

    /** Puts a translation in force (or out of it) in the store; says whether the tenant's rules changed. */
    const apply = (t: Translated): string | undefined => {
      const before = deps.draft.rule(namespace, name);
      if (t.model.state === 'Enforced') {
        if (before?.model === t.model) return undefined;
        deps.draft.setRule(namespace, name, compileRule(t.model));
        return namespace;
      }
      if (!before) return undefined;
      deps.draft.setRule(namespace, name, undefined);
      return namespace;
    };

    // An invalid spec keeps the last good version in force: nothing else changes.
    const invalid = (reason: 'InvalidSpec' | 'TranslationFailed', message: string): Outcome => {
      deps.log.warn({ kind: 'Rule', key: id, reason, problem: message }, 'Rejected Rule');
      const ready = (
        (obj.raw['status'] as { conditions?: { type?: string; reason?: string; message?: string }[] } | undefined)?.conditions ?? []
      ).find((c) => c.type === 'Ready');
      if (deps.leading() && (ready?.reason !== reason || ready.message !== message))
        deps.writer.recordEvent?.(obj, { type: 'Warning', reason, message });
      // The newer of what this replica remembers and what status records: a replica that missed a
      // generation (a relist delivers only the newest) must not put an older one back in force.
      const remembered = lastGood.get(id);
      const fromStatus = recorded(obj);
      const previous = fromStatus && (!remembered || fromStatus.generation > remembered.generation) ? fromStatus : remembered;
      if (previous) lastGood.set(id, previous);
      const kept = previous
        ? {
            status: 'Stale',
            generation: previous.generation,
            rego: previous.rego,
            spec: previous.spec,
            message: `generation ${generation} cannot be translated: ${message}; generation ${previous.generation} stays in force`,
          }
        : { status: 'Error', generation, message };
      return {
        phase: 'Invalid',
        ...(previous ? { rebuildIn: apply(previous) } : {}),
        status: status({ phase: 'Invalid', translation: kept }, [{ type: 'Ready', status: false, reason, message }]),
      };
    };

    const parsed = Rule.safeParse(obj.raw);
    if (!parsed.success) return invalid('InvalidSpec', describeIssues(parsed.error));
    const spec = parsed.data.spec;
    const specKey = canonicalJson(spec);

    let t = lastGood.get(id);
    if (t && t.specKey === specKey && t.regenerate === regenerate) {
      // Same spec (perhaps a new generation of it): the same translation and model, so nothing rebuilds.
      if (t.generation !== generation) {
        t = { ...t, generation };
        lastGood.set(id, t);
      }
    } else {
      const made = translate(obj, spec, generation, regenerate);
      if ('error' in made) return invalid(made.reason, made.error);
      t = made;
      lastGood.set(id, t);
      deps.log.info(
        { kind: 'Rule', key: id, generation, state: spec.state, ...(regenerate === undefined ? {} : { regenerate }) },
        'Translated Rule',
      );
    }
    const rebuildIn = apply(t);
    const isDeployed = t.model.state === 'Enforced';
    const phase = isDeployed ? 'Enforced' : spec.state;
    const message = isDeployed
      ? spec.state === 'Approved'
        ? 'Approved and deployed: decided by the service and built into the bundles that select it'
        : 'Decided by the service and built into the bundles that select it'
      : `State ${phase}: neither decided nor put in bundles`;
    return {
      phase,
      rebuildIn,
      status: status(
        {
          phase,
          translation: {
            status: 'Current',
            generation: t.generation,
            rego: t.rego,
            spec,
            ...(regenerate === undefined ? {} : { regenerate }),
          },
        },
        [{ type: 'Ready', status: true, reason: isDeployed ? 'Enforced' : 'NotDeployed', message }],
      ),
    };
  };
}
