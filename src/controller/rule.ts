// Rule → deployed CompiledRule in the store, and status: phase, conditions and translation.
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { checkSpec, conditionProblem } from '../admission/index.ts';
import { readStatus, Rule, type RulePhase, type RuleSpec, RuleStatus } from '../api/index.ts';
import { canonicalJson } from '../bundle/index.ts';
import { compileRule, ruleModel, ruleTranslation, type RuleModel } from '../policy/index.ts';
import { ANNOTATION_PROPOSED_STATE } from '../shadow/index.ts';
import type { ShadowEntry } from '../store/index.ts';
import { conditionsFor, warnOnce, type ConditionInput } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { ANNOTATION_REGENERATE, keyText, type ObjectKey, type SourceObject } from './types.ts';

interface Translated {
  /** The spec it was made from, and the digest of its canonical JSON (the cache key, with regenerate). */
  readonly spec: RuleSpec;
  readonly specKey: string;
  readonly regenerate: string | undefined;
  /** The generation whose spec this is (the latest one with that spec). */
  readonly generation: number;
  readonly model: RuleModel;
  readonly rego: string;
}

type FailureReason = 'InvalidSpec' | 'TranslationFailed';

interface Failed {
  readonly error: string;
  readonly reason: FailureReason;
}

/** The last good translation of each rule, by key text: what stays in force while a newer spec is invalid. */
type LastGood = Map<string, Translated>;

type RuleTranslation = NonNullable<RuleStatus['translation']>;

/** A Rule as one reconcile sees it: the object, and its status as recorded, read once. */
interface Seen {
  readonly key: ObjectKey;
  readonly id: string;
  readonly obj: SourceObject;
  readonly generation: number;
  readonly regenerate: string | undefined;
  readonly previous: RuleStatus;
}

/** Approved means "deploy it": it goes into bundles with Enforced ones, and is Enforced once built. */
function deployed(state: RuleModel['state']): boolean {
  return state === 'Enforced' || state === 'Approved';
}

function translate(obj: SourceObject, spec: RuleSpec, generation: number, regenerate: string | undefined): Translated | Failed {
  const res = ruleModel({ apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Rule', metadata: obj.metadata, spec });
  if (!res.ok) {
    const problem = conditionProblem(res.error);
    return { error: problem.message, reason: problem.reason };
  }
  const model: RuleModel = deployed(res.model.state) ? { ...res.model, state: 'Enforced' } : res.model;
  // The Rego is the bundles' own translation of this model (shared, not a copy of it).
  return { spec, specKey: specKeyOf(spec), regenerate, generation, model, rego: ruleTranslation(model, 0, false).text };
}

/** A digest of the spec's canonical JSON: what a rule remembers to know its spec again (the JSON itself is 5-10 times longer). */
function specKeyOf(spec: RuleSpec): string {
  return createHash('sha256').update(canonicalJson(spec)).digest('base64');
}

/**
 * The Rego a translation of `spec` records in status.translation.rego, for a reader of a status the
 * source keeps abridged (abridgeStatus); undefined: the spec does not translate.
 */
export function recordedRego(obj: SourceObject, spec: RuleSpec): string | undefined {
  const made = translate(obj, spec, 0, undefined);
  return 'error' in made ? undefined : made.rego;
}

/**
 * After a restart, the last good version of a rule whose spec is now invalid comes from its status:
 * the translation records the spec it was made from.
 */
function recorded(seen: Seen): Translated | undefined {
  const t = seen.previous.translation;
  if (!t || (t.status !== 'Current' && t.status !== 'Stale') || t.generation === undefined || t.spec === undefined) return undefined;
  const made = translate(seen.obj, t.spec, t.generation, undefined);
  return 'error' in made ? undefined : made;
}

/**
 * The spec the source holds when the schema's output is the same JSON (nothing defaulted or
 * dropped), else the output: the translation, its status and lint then share the source's one copy
 * rather than each rule keeping a second. Neither the controllers nor the sources change a spec.
 */
function sourceSpec(parsed: RuleSpec, raw: unknown): RuleSpec {
  return isDeepStrictEqual(parsed, raw) ? (raw as RuleSpec) : parsed;
}

/** A reconcile function for Rules; it remembers each rule's last good translation. */
export function createRuleReconciler(): (key: ObjectKey, deps: ReconcileDeps) => Outcome {
  const lastGood: LastGood = new Map();
  return function reconcileRule(key, deps) {
    return reconcile(key, deps, lastGood);
  };
}

function reconcile(key: ObjectKey, deps: ReconcileDeps, lastGood: LastGood): Outcome {
  const obj = deps.objects.get('Rule', key.namespace, key.name);
  if (!obj) return forget(key, deps, lastGood);
  const seen: Seen = {
    key,
    id: keyText(key),
    obj,
    generation: obj.metadata.generation ?? 0,
    regenerate: obj.metadata.annotations?.[ANNOTATION_REGENERATE],
    previous: readStatus(RuleStatus, obj.raw['status']),
  };
  const parsed = checkSpec(Rule, obj.raw);
  if (!parsed.ok) return reject(seen, deps, lastGood, { reason: parsed.problem.reason, error: parsed.problem.message });
  const spec = sourceSpec(parsed.object.spec, obj.raw['spec']);
  const t = translation(seen, spec, deps, lastGood);
  if ('error' in t) return reject(seen, deps, lastGood, t);
  const rebuildIn = putInForce(key, t, deps);
  const ignored = propose(seen, t, deps);
  const phase = t.model.state === 'Enforced' ? 'Enforced' : spec.state;
  return { phase, rebuildIn, status: currentStatus(seen, spec, t, phase, deps, ignored) };
}

/** A deleted Rule leaves the store; its tenant's bundles are rebuilt when it was in force. */
function forget(key: ObjectKey, deps: ReconcileDeps, lastGood: LastGood): Outcome {
  const { namespace, name } = key;
  lastGood.delete(keyText(key));
  const had = deps.draft.rule(namespace, name) !== undefined;
  deps.draft.setRule(namespace, name, undefined);
  deps.draft.setShadowRule(namespace, name, undefined);
  return had ? { rebuildIn: namespace } : {};
}

/** The translation of this spec: the one made before when spec and regenerate are the same, otherwise a new one. */
function translation(seen: Seen, spec: RuleSpec, deps: ReconcileDeps, lastGood: LastGood): Translated | Failed {
  const known = lastGood.get(seen.id);
  if (known && known.specKey === specKeyOf(spec) && known.regenerate === seen.regenerate) {
    // Same spec (perhaps a new generation of it): the same translation and model, so nothing rebuilds.
    if (known.generation === seen.generation) return known;
    const renumbered = { ...known, generation: seen.generation };
    lastGood.set(seen.id, renumbered);
    return renumbered;
  }
  const made = translate(seen.obj, spec, seen.generation, seen.regenerate);
  if ('error' in made) return made;
  lastGood.set(seen.id, made);
  deps.log.info(
    {
      kind: 'Rule',
      key: seen.id,
      generation: seen.generation,
      state: spec.state,
      ...(seen.regenerate === undefined ? {} : { regenerate: seen.regenerate }),
    },
    'Translated Rule',
  );
  return made;
}

/** Puts a translation in force (or out of it) in the store; says whether the tenant's rules changed. */
function putInForce(key: ObjectKey, t: Translated, deps: ReconcileDeps): string | undefined {
  const { namespace, name } = key;
  const before = deps.draft.rule(namespace, name);
  if (t.model.state === 'Enforced') {
    if (before?.model === t.model) return undefined;
    deps.draft.setRule(namespace, name, compileRule(t.model));
    return namespace;
  }
  if (!before) return undefined;
  deps.draft.setRule(namespace, name, undefined);
  return namespace;
}

/** States an Enforced rule may be proposed to move to (annotation acl.policyagent.dev/proposed-state). */
const LEAVING = new Set(['Suspended', 'Archived', 'Draft']);

/**
 * Puts the rule's part in its tenant's proposal into the draft (docs/rules.md, "Shadow decisions"): a
 * Proposed rule, or an Enforced one marked for removal; none otherwise. Returns why an annotation
 * was ignored, for the Ready condition (never silently).
 */
function propose(seen: Seen, t: Translated, deps: ReconcileDeps): string | undefined {
  const { namespace, name } = seen.key;
  const mark = seen.obj.metadata.annotations?.[ANNOTATION_PROPOSED_STATE];
  let entry: ShadowEntry | undefined;
  if (t.model.state === 'Proposed') {
    const before = deps.draft.shadowRule(namespace, name);
    // The same model is the same spec: its compiled rule (and so its shadow counts) are kept.
    entry = before?.role === 'Proposed' && before.rule.model === t.model ? before : { role: 'Proposed', rule: compileRule(t.model) };
  } else if (t.model.state === 'Enforced' && mark !== undefined && LEAVING.has(mark)) entry = { role: 'Removal' };
  deps.draft.setShadowRule(namespace, name, entry);
  if (mark === undefined || entry?.role === 'Removal') return undefined;
  return LEAVING.has(mark)
    ? `Warning: annotation ${ANNOTATION_PROPOSED_STATE} is ignored: only an Enforced or Approved rule can be proposed to leave`
    : `Warning: annotation ${ANNOTATION_PROPOSED_STATE}: ${JSON.stringify(mark.slice(0, 63))} is ignored: it takes Suspended, Archived or Draft`;
}

/**
 * The newer of what this replica remembers and what status records: a replica that missed a
 * generation (a relist delivers only the newest) must not put an older one back in force.
 */
function lastGoodOf(seen: Seen, lastGood: LastGood): Translated | undefined {
  const remembered = lastGood.get(seen.id);
  const fromStatus = recorded(seen);
  const previous = fromStatus && (!remembered || fromStatus.generation > remembered.generation) ? fromStatus : remembered;
  if (previous) lastGood.set(seen.id, previous);
  return previous;
}

/** An invalid spec keeps the last good version in force: nothing else changes. */
function reject(seen: Seen, deps: ReconcileDeps, lastGood: LastGood, failed: Failed): Outcome {
  const { reason, error: message } = failed;
  // An invalid spec proposes nothing (the last good version stays in force, unmarked).
  deps.draft.setShadowRule(seen.key.namespace, seen.key.name, undefined);
  deps.log.warn({ kind: 'Rule', key: seen.id, reason, problem: message }, 'Rejected Rule');
  warnOnce(deps, seen.obj, seen.previous.conditions, reason, message);
  const previous = lastGoodOf(seen, lastGood);
  const kept: RuleTranslation = previous
    ? {
        status: 'Stale',
        generation: previous.generation,
        rego: previous.rego,
        spec: previous.spec,
        message: `generation ${seen.generation} cannot be translated: ${message}; generation ${previous.generation} stays in force`,
      }
    : { status: 'Error', generation: seen.generation, message };
  return {
    phase: 'Invalid',
    ...(previous ? { rebuildIn: putInForce(seen.key, previous, deps) } : {}),
    status: statusOf(seen, deps, 'Invalid', kept, { type: 'Ready', status: false, reason, message }),
  };
}

/** The status of a Rule whose spec translated: in force, or deliberately not deployed. */
function currentStatus(
  seen: Seen,
  spec: RuleSpec,
  t: Translated,
  phase: RulePhase,
  deps: ReconcileDeps,
  ignored: string | undefined,
): RuleStatus {
  const isDeployed = t.model.state === 'Enforced';
  const stateMessage = isDeployed
    ? spec.state === 'Approved'
      ? 'Approved and deployed: decided by the service and built into the bundles that select it'
      : 'Decided by the service and built into the bundles that select it'
    : `State ${phase}: neither decided nor put in bundles`;
  const message = ignored === undefined ? stateMessage : `${stateMessage}. ${ignored}`;
  const current: RuleTranslation = {
    status: 'Current',
    generation: t.generation,
    rego: t.rego,
    spec,
    ...(seen.regenerate === undefined ? {} : { regenerate: seen.regenerate }),
  };
  return statusOf(seen, deps, phase, current, { type: 'Ready', status: true, reason: isDeployed ? 'Enforced' : 'NotDeployed', message });
}

function statusOf(seen: Seen, deps: ReconcileDeps, phase: RulePhase, translation: RuleTranslation, ready: ConditionInput): RuleStatus {
  return {
    phase,
    translation,
    observedGeneration: seen.generation,
    conditions: conditionsFor([ready], seen.generation, deps.now(), seen.previous.conditions),
  };
}
