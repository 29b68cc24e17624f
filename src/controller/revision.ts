// Which revision of a Bundle's archive is built: the leader numbers new bytes, a follower builds
// only what the leader recorded in status. Revision numbers are never reused for other bytes. The
// current signing key is part of a revision's inputs (a rotation's start moves it once); the
// previous key's archive is not (its arrival or retirement re-signs the same revision).
import type { BundleStatus } from '../api/index.ts';
import { buildBundle, bundleRegoSteps, inputDigestOf, type BuiltBundle, type BundleInput, type BundleSource } from '../bundle/index.ts';
import type { KeyRing } from '../signing/index.ts';
import type { BundleEntry } from '../store/index.ts';
import { drive } from '../work/index.ts';
import type { ReconcileDeps } from './deps.ts';
import { signedByRing } from './signed.ts';

/** The revision a status records, when it records one. */
export function recordedRevision(recorded: BundleStatus): number | undefined {
  return recorded.revision !== undefined && recorded.revision > 0 ? recorded.revision : undefined;
}

/** The ring without its previous key: enough to tell whether a revision's bytes are the recorded ones. */
function currentOnly(ring: KeyRing | undefined): KeyRing | undefined {
  return ring ? { current: ring.current } : undefined;
}

/** `built` with exactly the ring's archives: the same revision, the previous key's archive added or dropped. */
export async function withRing(
  input: BundleInput,
  built: BuiltBundle,
  ring: KeyRing | undefined,
  deps: ReconcileDeps,
): Promise<BuiltBundle> {
  if (signedByRing(built, ring)) return built;
  return buildBundle(input, built.revision, { ring, reuse: built, packer: deps.packer });
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
  ring: KeyRing | undefined,
  deps: ReconcileDeps,
): Promise<BuiltBundle> {
  const revision = recordedRevision(recorded);
  const source = await sourceOf(input, deps);
  const build = (at: number, keys: KeyRing | undefined = ring): Promise<BuiltBundle> =>
    buildBundle(input, at, { source, packer: deps.packer, ring: keys });
  if (entry && (revision === undefined || entry.built.revision >= revision)) {
    if (entry.built.inputDigest === inputDigestOf(input, source.regoHex, ring?.current.kid))
      return withRing(input, entry.built, ring, deps);
    return build(entry.built.revision + 1);
  }
  if (revision === undefined) return build(1);
  // The previous key's archive only once the revision is known to stay.
  const same = await build(revision, currentOnly(ring));
  return same.digest === recorded.digest ? withRing(input, same, ring, deps) : build(revision + 1);
}

/**
 * The Rego (translated in slices, rules already translated taken as they are) and its hash (by the
 * packer): no step holds the event loop for long.
 */
async function sourceOf(input: BundleInput, deps: ReconcileDeps): Promise<BundleSource> {
  const rego = await drive(bundleRegoSteps(input), deps.slicer);
  return { rego, regoHex: await deps.packer.hash(rego) };
}

/**
 * A follower builds only the revision the leader recorded in status, and serves it only when its
 * bytes are the recorded ones; until then it keeps serving what it served (perhaps nothing). Its
 * keys are the leader's (the same Secret), so the previous key's archive is the leader's too.
 */
export async function followBuild(
  input: BundleInput,
  entry: BundleEntry | undefined,
  recorded: BundleStatus,
  ring: KeyRing | undefined,
  deps: ReconcileDeps,
): Promise<BuiltBundle | undefined> {
  const revision = recordedRevision(recorded);
  if (revision === undefined) return undefined;
  const source = await sourceOf(input, deps);
  if (entry && entry.built.revision === revision && entry.built.inputDigest === inputDigestOf(input, source.regoHex, ring?.current.kid)) {
    return entry.built.digest === recorded.digest ? withRing(input, entry.built, ring, deps) : undefined;
  }
  const built = await buildBundle(input, revision, { source, packer: deps.packer, ring: currentOnly(ring) });
  return built.digest === recorded.digest ? withRing(input, built, ring, deps) : undefined;
}
