// Which revision of a Bundle's archive is built: the leader numbers new bytes, a follower builds
// only what the leader recorded in status. Revision numbers are never reused for other bytes.
import type { BundleStatus } from '../api/index.ts';
import { buildBundle, bundleRegoSteps, inputDigestOf, type BuiltBundle, type BundleInput, type Text } from '../bundle/index.ts';
import type { BundleEntry } from '../store/index.ts';
import { drive } from '../work/index.ts';
import type { ReconcileDeps } from './deps.ts';

/** The revision a status records, when it records one. */
export function recordedRevision(recorded: BundleStatus): number | undefined {
  return recorded.revision !== undefined && recorded.revision > 0 ? recorded.revision : undefined;
}

/**
 * Builds at the baseline revision (the one served, or the one in status when that is newer: after
 * a restart, or when another replica led before): equal bytes mean nothing changed, otherwise the
 * content is built again at revision + 1.
 */
export async function nextBuild(
  input: BundleInput,
  entry: BundleEntry | undefined,
  recorded: BundleStatus,
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
  return same.digest === recorded.digest ? same : buildBundle(input, revision + 1, source, deps.packer);
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
export async function followBuild(
  input: BundleInput,
  entry: BundleEntry | undefined,
  recorded: BundleStatus,
  deps: ReconcileDeps,
): Promise<BuiltBundle | undefined> {
  const revision = recordedRevision(recorded);
  if (revision === undefined) return undefined;
  const source = await sourceOf(input, deps);
  if (entry && entry.built.revision === revision && entry.built.inputDigest === source.inputDigest) {
    return entry.built.digest === recorded.digest ? entry.built : undefined;
  }
  const built = await buildBundle(input, revision, source, deps.packer);
  return built.digest === recorded.digest ? built : undefined;
}
