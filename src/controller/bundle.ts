// Bundle → deterministic archive in the store; the revision moves exactly when the bytes would.
import { Bundle } from '../api/index.ts';
import { describeIssues } from '../api/manifests.ts';
import {
  buildBundle,
  bundleRegoSteps,
  inputDigestOf,
  selectRules,
  type BuiltBundle,
  type BundleInput,
  type Text,
} from '../bundle/index.ts';
import { drive } from '../work/slice.ts';
import type { RegoVersion } from '../policy/index.ts';
import { bundleKey, type BundleEntry } from '../store/index.ts';
import { agentsStatus, rolloutCondition } from '../fleet/index.ts';
import { conditionsFor, type ConditionInput } from './conditions.ts';
import type { Outcome, ReconcileDeps } from './deps.ts';
import { keyText, type ObjectKey } from './types.ts';

interface RecordedStatus {
  revision?: unknown;
  digest?: unknown;
  etag?: unknown;
  ruleCount?: unknown;
  conditions?: unknown;
  lastSync?: unknown;
}

function recordedFields(recorded: RecordedStatus | undefined): Record<string, unknown> {
  if (!recorded) return {};
  const { revision, digest, etag, ruleCount } = recorded;
  return Object.fromEntries(Object.entries({ revision, digest, etag, ruleCount }).filter(([, v]) => v !== undefined));
}

/**
 * What the bundle's OPA agents run, against the revision served: `status.agents` (the AGENTS
 * column) and the RolledOut condition a pipeline waits on.
 */
function rollout(
  deps: ReconcileDeps,
  namespace: string,
  name: string,
  revision: number | undefined,
): { agents: Record<string, unknown>; condition: ConditionInput } {
  const summary = deps.agents.summary(namespace, name, revision, deps.now().getTime());
  const c = rolloutCondition(summary, revision, deps.agents.windowSeconds);
  return {
    agents: { ...agentsStatus(summary) },
    condition: {
      type: 'RolledOut',
      status: c.status === 'Unknown' ? 'Unknown' : c.status === 'True',
      reason: c.reason,
      message: c.message,
    },
  };
}

function recordedRevision(recorded: RecordedStatus | undefined): number | undefined {
  return typeof recorded?.revision === 'number' && recorded.revision > 0 ? recorded.revision : undefined;
}

/**
 * Builds at the baseline revision (the one served, or the one in status when that is newer: after
 * a restart, or when another replica led before): equal bytes mean nothing changed, otherwise the
 * content is built again at revision + 1. Revision numbers are never reused for other bytes.
 */
async function nextBuild(
  input: BundleInput,
  entry: BundleEntry | undefined,
  recorded: RecordedStatus | undefined,
  deps: ReconcileDeps,
): Promise<BuiltBundle> {
  const revision = recordedRevision(recorded);
  const source = await sourceOf(input, deps);
  if (entry && (revision === undefined || entry.built.revision >= revision)) {
    if (entry.built.inputDigest === source.inputDigest) return entry.built;
    return buildBundle(input, entry.built.revision + 1, source, deps.packer);
  }
  if (revision === undefined) return buildBundle(input, 1, source, deps.packer);
  const same = await buildBundle(input, revision, source, deps.packer);
  return same.digest === recorded?.digest ? same : buildBundle(input, revision + 1, source, deps.packer);
}

/**
 * The Rego (translated in slices, rules already translated taken as they are) and the digest of
 * the inputs (hashed by the packer): no step holds the event loop for long.
 */
async function sourceOf(input: BundleInput, deps: ReconcileDeps): Promise<{ rego: Text; inputDigest: string }> {
  const rego = await drive(bundleRegoSteps(input), deps.slicer);
  return { rego, inputDigest: inputDigestOf(input, await deps.packer.hash(rego)) };
}

/**
 * A follower builds only the revision the leader recorded in status, and serves it only when its
 * bytes are the recorded ones; until then it keeps serving what it served (perhaps nothing).
 */
async function followBuild(
  input: BundleInput,
  entry: BundleEntry | undefined,
  recorded: RecordedStatus | undefined,
  deps: ReconcileDeps,
): Promise<BuiltBundle | undefined> {
  const revision = recordedRevision(recorded);
  if (revision === undefined) return undefined;
  const source = await sourceOf(input, deps);
  if (entry && entry.built.revision === revision && entry.built.inputDigest === source.inputDigest) {
    return entry.built.digest === recorded?.digest ? entry.built : undefined;
  }
  const built = await buildBundle(input, revision, source, deps.packer);
  return built.digest === recorded?.digest ? built : undefined;
}

export async function reconcileBundle(key: ObjectKey, deps: ReconcileDeps): Promise<Outcome> {
  const { namespace, name } = key;
  const obj = deps.objects.get('Bundle', namespace, name);
  const served = deps.draft.bundle(namespace, name);
  if (!obj) {
    deps.draft.setBundle(namespace, name, undefined);
    return served ? { enqueue: [{ kind: 'Connector', namespace, name: served.connector }] } : {};
  }
  const generation = obj.metadata.generation ?? 0;
  const recorded = obj.raw['status'] as RecordedStatus | undefined;
  const parsed = Bundle.safeParse(obj.raw);
  if (!parsed.success) {
    const message = describeIssues(parsed.error);
    deps.log.warn({ kind: 'Bundle', key: keyText(key), problem: message }, 'Rejected Bundle');
    // The revision still served is still what OPAs should run.
    const fleet = rollout(deps, namespace, name, served?.built.revision);
    return {
      phase: 'Invalid',
      status: {
        // What is served (or, after a restart, what was): revision numbers are never reused.
        ...(served ? statusOf(served.built, served.ruleCount) : recordedFields(recorded)),
        phase: 'Invalid',
        observedGeneration: generation,
        agents: fleet.agents,
        conditions: conditionsFor(
          [
            {
              type: 'Ready',
              status: false,
              reason: 'InvalidSpec',
              message: served ? `${message}; revision ${served.built.revision} is still served` : message,
            },
            fleet.condition,
          ],
          generation,
          deps.now(),
          recorded?.conditions,
        ),
      },
    };
  }
  const { connector, entityTypes, regoVersion } = parsed.data.spec;
  const rules = selectRules(
    namespace,
    deps.draft.rules(namespace).map((r) => r.model),
    { entityTypes },
  );
  await deps.draft.prepareDirectory(namespace, (steps) => drive(steps, deps.slicer));
  const directory = deps.draft.directory(namespace);
  const input: BundleInput = { tenant: namespace, name, connector, regoVersion: regoVersion as RegoVersion, rules, entityTypes, directory };
  // The same rule objects (a rule is a new object only when it was compiled again), the same
  // directory object (a new one whenever a Directory changed) and the same spec cannot give other bytes: nothing is translated again, e.g. when only lastSync moved.
  const unchanged =
    served !== undefined &&
    served.connector === connector &&
    served.source.regoVersion === input.regoVersion &&
    served.source.entityTypes === JSON.stringify(entityTypes ?? []) &&
    served.source.directory === directory &&
    served.source.rules.length === rules.length &&
    served.source.rules.every((r, i) => r === rules[i]);
  const source = { rules, regoVersion: input.regoVersion, entityTypes: JSON.stringify(entityTypes ?? []), directory };
  if (!deps.leading()) {
    const recordedRev = recordedRevision(recorded);
    const isRecorded = served !== undefined && served.built.revision === recordedRev && served.built.digest === recorded?.digest;
    const consistent = unchanged && isRecorded ? undefined : await followBuild(input, served, recorded, deps);
    if (consistent && consistent !== served?.built) {
      deps.draft.setBundle(namespace, name, { tenant: namespace, name, connector, built: consistent, ruleCount: rules.length, source });
      deps.log.info(
        { kind: 'Bundle', key: keyText(key), revision: consistent.revision, digest: consistent.digest },
        'Serving the revision the leader recorded',
      );
    } else if (!consistent && served && !isRecorded && recordedRev !== undefined && served.built.revision >= recordedRev) {
      // Built while this replica led, never recorded, and the leader since gave that revision number
      // (or a lower one) to other bytes: serving it could show one revision with two contents.
      deps.draft.setBundle(namespace, name, undefined);
      deps.log.warn(
        { kind: 'Bundle', key: keyText(key), revision: served.built.revision, recorded: recordedRev },
        'Stopped serving a revision the leader did not record',
      );
    }
    return { phase: deps.draft.bundle(namespace, name) ? 'Ready' : 'Pending' };
  }
  const built = unchanged ? served.built : await nextBuild(input, served, recorded, deps);
  const enqueue: ObjectKey[] = [];
  if (!unchanged) {
    deps.draft.setBundle(namespace, name, { tenant: namespace, name, connector, built, ruleCount: rules.length, source });
    if (served?.built.revision !== built.revision) {
      deps.log.info(
        {
          kind: 'Bundle',
          key: keyText(key),
          revision: built.revision,
          rules: rules.length,
          bytes: built.bytes.length,
          digest: built.digest,
        },
        'Built bundle',
      );
      if (recordedRevision(recorded) !== built.revision) {
        deps.writer.recordEvent?.(obj, {
          type: 'Normal',
          reason: 'Built',
          message: `Revision ${built.revision} with ${rules.length} rule(s), ${built.bytes.length} bytes`,
        });
      }
    }
    // The connectors' status lists their bundles.
    if (served === undefined || served.connector !== connector) enqueue.push({ kind: 'Connector', namespace, name: connector });
    if (served && served.connector !== connector) enqueue.push({ kind: 'Connector', namespace, name: served.connector });
  }
  const hasConnector = deps.objects.get('Connector', namespace, connector) !== undefined;
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
        message: `Connector ${connector} does not exist in ${namespace}: no OPA can fetch this bundle`,
      };
  const phase = hasConnector ? 'Ready' : 'Pending';
  // The later of this replica's last answered poll and the one recorded (by an earlier run, or by
  // the replica that led before): a restart never erases it or moves it back.
  const seen = deps.activity.lastSync(bundleKey(namespace, name));
  const recordedSync = typeof recorded?.lastSync === 'string' ? recorded.lastSync : undefined;
  const lastSync = seen === undefined || (recordedSync !== undefined && Date.parse(recordedSync) > Date.parse(seen)) ? recordedSync : seen;
  const fleet = rollout(deps, namespace, name, built.revision);
  return {
    phase,
    enqueue,
    status: {
      phase,
      observedGeneration: generation,
      ...statusOf(built, rules.length),
      ...(lastSync ? { lastSync } : {}),
      agents: fleet.agents,
      conditions: conditionsFor([ready, fleet.condition], generation, deps.now(), recorded?.conditions),
    },
  };
}

function statusOf(built: BuiltBundle, ruleCount: number): Record<string, unknown> {
  return { revision: built.revision, digest: built.digest, etag: built.etag, ruleCount };
}
