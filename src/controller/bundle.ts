// Bundle → deterministic archive in the store, signed by the keys the SigningHolder holds; the
// revision moves exactly when the bytes would. Status: phase, the revision served (digest, ETag,
// rules, signing key), lastSync, the agents and conditions (Ready, Signed, RolledOut).
import { checkSpec } from '../admission/index.ts';
import { Bundle, type BundleSpec, BundleStatus, readStatus } from '../api/index.ts';
import { selectRules, type BuiltBundle, type BundleInput } from '../bundle/index.ts';
import { agentsStatus, keyRotated, keysInUse, rolloutCondition, type AgentsStatus } from '../fleet/index.ts';
import { bundleKey, type BundleEntry } from '../store/index.ts';
import { drive } from '../work/index.ts';
import { conditionsFor, type ConditionInput } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { followBuild, nextBuild, recordedRevision, withRing } from './revision.ts';
import { buildKeys, sameCurrentKey, signedCondition } from './signed.ts';
import type { KeyRing } from '../signing/index.ts';
import { keyText, type ObjectKey, type SourceObject } from './types.ts';

/** A Bundle as one reconcile sees it: the object, its status as recorded (read once), what is served. */
interface Seen {
  readonly key: ObjectKey;
  readonly obj: SourceObject;
  readonly generation: number;
  readonly previous: BundleStatus;
  readonly served: BundleEntry | undefined;
}

/** What this reconcile builds from. */
interface Plan {
  readonly input: BundleInput;
  readonly source: BundleEntry['source'];
  /** The keys this build signs with (undefined: unsigned). */
  readonly ring: KeyRing | undefined;
  /**
   * The entry served, when it was built from these same inputs and signed by the same current key:
   * then it is what they give (its previous key's archive may still need adding or dropping).
   */
  readonly reused: BundleEntry | undefined;
}

type ServedFields = Pick<BundleStatus, 'revision' | 'digest' | 'etag' | 'ruleCount' | 'signingKey'>;

function statusOf(built: BuiltBundle, ruleCount: number): ServedFields {
  return { revision: built.revision, digest: built.digest, etag: built.etag, ruleCount, ...(built.kid ? { signingKey: built.kid } : {}) };
}

function recordedFields({ revision, digest, etag, ruleCount, signingKey }: BundleStatus): ServedFields {
  return {
    ...(revision === undefined ? {} : { revision }),
    ...(digest === undefined ? {} : { digest }),
    ...(etag === undefined ? {} : { etag }),
    ...(ruleCount === undefined ? {} : { ruleCount }),
    ...(signingKey === undefined ? {} : { signingKey }),
  };
}

/**
 * What the bundle's OPA agents run, against the revision served: `status.agents` (the AGENTS
 * column) and the RolledOut condition a pipeline waits on; and the key each verifies with against
 * the keys that sign: KeyRotated, which a rotation waits on (kubectl wait --for=condition=KeyRotated).
 */
function rollout(
  deps: ReconcileDeps,
  key: ObjectKey,
  revision: number | undefined,
): { agents: AgentsStatus; condition: ConditionInput; keyRotated: ConditionInput } {
  const nowMs = deps.now().getTime();
  const summary = deps.agents.summary(key.namespace, key.name, revision, nowMs);
  const c = rolloutCondition(summary, revision, deps.agents.windowSeconds);
  const k = keyRotated(deps.agents.agents(key.namespace, key.name, nowMs), keysInUse(deps.signing.get()));
  const input = (type: string, x: { status: 'True' | 'False' | 'Unknown'; reason: string; message: string }): ConditionInput => ({
    type,
    status: x.status === 'Unknown' ? 'Unknown' : x.status === 'True',
    reason: x.reason,
    message: x.message,
  });
  return { agents: agentsStatus(summary), condition: input('RolledOut', c), keyRotated: input('KeyRotated', k) };
}

export async function reconcileBundle(key: ObjectKey, deps: ReconcileDeps): Promise<Outcome> {
  const { namespace, name } = key;
  const obj = deps.objects.get('Bundle', namespace, name);
  const served = deps.draft.bundle(namespace, name);
  if (!obj) {
    deps.draft.setBundle(namespace, name, undefined);
    return served ? { enqueue: [{ kind: 'Connector', namespace, name: served.connector }] } : {};
  }
  const seen: Seen = { key, obj, generation: obj.metadata.generation ?? 0, previous: readStatus(BundleStatus, obj.raw['status']), served };
  const parsed = checkSpec(Bundle, obj.raw);
  if (!parsed.ok) return reject(seen, deps, parsed.problem.message);
  const keys = buildKeys(deps.signing.get());
  if ('missing' in keys) return noSigningKey(seen, deps);
  const plan = await planOf(seen, parsed.object.spec, keys.ring, deps);
  if (!deps.leading()) return follow(seen, plan, deps);
  const { built, enqueue } = await lead(seen, plan, deps);
  return { ...builtStatus(seen, plan, built, deps), enqueue };
}

/** An invalid spec: the revision still served is still what OPAs should run. */
function reject(seen: Seen, deps: ReconcileDeps, message: string): Outcome {
  const { key, served, generation } = seen;
  deps.log.warn({ kind: 'Bundle', key: keyText(key), problem: message }, 'Rejected Bundle');
  const fleet = rollout(deps, key, served?.built.revision);
  const invalid: ConditionInput = {
    type: 'Ready',
    status: false,
    reason: 'InvalidSpec',
    message: served ? `${message}; revision ${served.built.revision} is still served` : message,
  };
  return {
    phase: 'Invalid',
    status: {
      // What is served (or, after a restart, what was): revision numbers are never reused.
      ...(served ? statusOf(served.built, served.ruleCount) : recordedFields(seen.previous)),
      phase: 'Invalid',
      observedGeneration: generation,
      agents: fleet.agents,
      conditions: conditionsFor(
        [invalid, signedCondition(deps.signing.get(), served?.built), fleet.condition, fleet.keyRotated],
        generation,
        deps.now(),
        seen.previous.conditions,
      ),
    },
  };
}

/**
 * Bundles are signed but no good key was ever read: nothing unsigned is served, so nothing is
 * served at all (OPAs keep the revision they hold); the revision recorded stays in status.
 */
function noSigningKey(seen: Seen, deps: ReconcileDeps): Outcome {
  const { key, served, generation } = seen;
  if (served) {
    deps.draft.setBundle(key.namespace, key.name, undefined);
    deps.log.warn({ kind: 'Bundle', key: keyText(key), revision: served.built.revision }, 'Stopped serving a bundle: no signing key');
  }
  // The connector's status lists its bundles.
  const enqueue: ObjectKey[] = served ? [{ kind: 'Connector', namespace: key.namespace, name: served.connector }] : [];
  if (!deps.leading()) return { phase: 'Pending', enqueue };
  const signed = signedCondition(deps.signing.get(), undefined);
  const fleet = rollout(deps, key, recordedRevision(seen.previous));
  const ready: ConditionInput = { type: 'Ready', status: false, reason: 'NoSigningKey', message: signed.message };
  return {
    phase: 'Pending',
    enqueue,
    status: {
      ...recordedFields(seen.previous),
      phase: 'Pending',
      observedGeneration: generation,
      agents: fleet.agents,
      conditions: conditionsFor([ready, signed, fleet.condition, fleet.keyRotated], generation, deps.now(), seen.previous.conditions),
    },
  };
}

/** The rules and directory this spec selects, and whether the entry served was built from the very same. */
async function planOf(seen: Seen, spec: BundleSpec, ring: KeyRing | undefined, deps: ReconcileDeps): Promise<Plan> {
  const { key, served } = seen;
  const { connector, entityTypes } = spec;
  const rules = selectRules(
    key.namespace,
    deps.draft.rules(key.namespace).map((r) => r.model),
    { entityTypes },
  );
  await deps.draft.prepareDirectory(key.namespace, (steps) => drive(steps, deps.slicer));
  const directory = deps.draft.directory(key.namespace);
  const regoVersion = spec.regoVersion === 1 ? 1 : 0;
  const input: BundleInput = { tenant: key.namespace, name: key.name, connector, regoVersion, rules, entityTypes, directory };
  const source: BundleEntry['source'] = { rules, regoVersion, entityTypes: JSON.stringify(entityTypes ?? []), directory };
  // The same rule objects (a rule is a new object only when it was compiled again), the same
  // directory object (a new one whenever a Directory changed) and the same spec cannot give other
  // bytes: nothing is translated again, e.g. when only lastSync moved.
  const unchanged =
    served !== undefined &&
    served.connector === connector &&
    served.source.regoVersion === regoVersion &&
    served.source.entityTypes === source.entityTypes &&
    served.source.directory === directory &&
    served.source.rules.length === rules.length &&
    served.source.rules.every((r, i) => r === rules[i]) &&
    sameCurrentKey(served.built, ring);
  return { input, source, ring, reused: unchanged ? served : undefined };
}

function entryOf(plan: Plan, built: BuiltBundle): BundleEntry {
  const { tenant, name, connector, rules } = plan.input;
  return { tenant, name, connector, built, ruleCount: rules.length, source: plan.source };
}

/**
 * A follower serves the revision the leader recorded once it has built the same bytes, and stops
 * serving one it built itself (while leading) that the leader never recorded.
 */
async function follow(seen: Seen, plan: Plan, deps: ReconcileDeps): Promise<Outcome> {
  const { key, served, previous } = seen;
  const recordedRev = recordedRevision(previous);
  const isRecorded = served !== undefined && served.built.revision === recordedRev && served.built.digest === previous.digest;
  const consistent =
    plan.reused !== undefined && isRecorded
      ? await withRing(plan.input, plan.reused.built, plan.ring, deps)
      : await followBuild(plan.input, served, previous, plan.ring, deps);
  if (consistent && consistent !== served?.built) {
    deps.draft.setBundle(key.namespace, key.name, entryOf(plan, consistent));
    deps.log.info(
      { kind: 'Bundle', key: keyText(key), revision: consistent.revision, digest: consistent.digest },
      'Serving the revision the leader recorded',
    );
  } else if (!consistent && served && !isRecorded && recordedRev !== undefined && served.built.revision >= recordedRev) {
    // Built while this replica led, never recorded, and the leader since gave that revision number
    // (or a lower one) to other bytes: serving it could show one revision with two contents.
    deps.draft.setBundle(key.namespace, key.name, undefined);
    deps.log.warn(
      { kind: 'Bundle', key: keyText(key), revision: served.built.revision, recorded: recordedRev },
      'Stopped serving a revision the leader did not record',
    );
  }
  return { phase: deps.draft.bundle(key.namespace, key.name) ? 'Ready' : 'Pending' };
}

/** The leader's part: the archive for these inputs in the store, and the connectors told when theirs changed. */
async function lead(seen: Seen, plan: Plan, deps: ReconcileDeps): Promise<{ built: BuiltBundle; enqueue: ObjectKey[] }> {
  const { key, served } = seen;
  if (plan.reused) {
    // The same revision; a rotation's previous key came or went: its archive is added or dropped.
    const built = await withRing(plan.input, plan.reused.built, plan.ring, deps);
    if (built !== plan.reused.built) deps.draft.setBundle(key.namespace, key.name, entryOf(plan, built));
    return { built, enqueue: [] };
  }
  const { connector } = plan.input;
  const built = await nextBuild(plan.input, served, seen.previous, plan.ring, deps);
  deps.draft.setBundle(key.namespace, key.name, entryOf(plan, built));
  if (served?.built.revision !== built.revision) announce(seen, built, plan.input.rules.length, deps);
  // The connectors' status lists their bundles.
  const enqueue: ObjectKey[] = [];
  if (served === undefined || served.connector !== connector)
    enqueue.push({ kind: 'Connector', namespace: key.namespace, name: connector });
  if (served && served.connector !== connector) enqueue.push({ kind: 'Connector', namespace: key.namespace, name: served.connector });
  return { built, enqueue };
}

/** A new revision is logged, and reported as an event unless status already records it. */
function announce(seen: Seen, built: BuiltBundle, ruleCount: number, deps: ReconcileDeps): void {
  deps.log.info(
    { kind: 'Bundle', key: keyText(seen.key), revision: built.revision, rules: ruleCount, bytes: built.bytes.length, digest: built.digest },
    'Built bundle',
  );
  if (recordedRevision(seen.previous) !== built.revision) {
    deps.writer.recordEvent?.(seen.obj, {
      type: 'Normal',
      reason: 'Built',
      message: `Revision ${built.revision} with ${ruleCount} rule(s), ${built.bytes.length} bytes`,
    });
  }
}

/**
 * The later of this replica's last answered poll and the one recorded (by an earlier run, or by
 * the replica that led before): a restart never erases it or moves it back.
 */
function lastSyncOf(seen: Seen, deps: ReconcileDeps): string | undefined {
  const answered = deps.activity.lastSync(bundleKey(seen.key.namespace, seen.key.name));
  const recorded = seen.previous.lastSync;
  return answered === undefined || (recorded !== undefined && Date.parse(recorded) > Date.parse(answered)) ? recorded : answered;
}

/** What a built Bundle's status says: Ready when its connector exists, the revision served, lastSync and the agents. */
function builtStatus(
  seen: Seen,
  plan: Plan,
  built: BuiltBundle,
  deps: ReconcileDeps,
): { phase: 'Ready' | 'Pending'; status: BundleStatus } {
  const { key, generation } = seen;
  const { connector, rules } = plan.input;
  const hasConnector = deps.objects.get('Connector', key.namespace, connector) !== undefined;
  const ready: ConditionInput = hasConnector
    ? {
        type: 'Ready',
        status: true,
        reason: 'Built',
        message: `Revision ${built.revision} with ${rules.length} rule(s) is served to connector ${connector}`,
      }
    : {
        type: 'Ready',
        status: false,
        reason: 'ConnectorNotFound',
        message: `Connector ${connector} does not exist in ${key.namespace}: no OPA can fetch this bundle`,
      };
  const phase = hasConnector ? 'Ready' : 'Pending';
  const lastSync = lastSyncOf(seen, deps);
  const fleet = rollout(deps, key, built.revision);
  return {
    phase,
    status: {
      phase,
      observedGeneration: generation,
      ...statusOf(built, rules.length),
      ...(lastSync ? { lastSync } : {}),
      agents: fleet.agents,
      conditions: conditionsFor(
        [ready, signedCondition(deps.signing.get(), built), fleet.condition, fleet.keyRotated],
        generation,
        deps.now(),
        seen.previous.conditions,
      ),
    },
  };
}
