// What the signing keys mean for one Bundle: the ring a build signs with, whether a built revision
// carries exactly that ring's archives, and the Signed condition (issue 27, docs/opa.md).
import type { BuiltBundle } from '../bundle/index.ts';
import type { KeyRing } from '../signing/index.ts';
import type { ConditionInput } from './conditions.ts';
import type { SigningState } from './signing.ts';

/** The keys a build signs with: none when unsigned; `missing` when bundles are signed but no good key was ever read. */
export type BuildKeys = { readonly ring: KeyRing | undefined } | { readonly missing: true };

export function buildKeys(state: SigningState): BuildKeys {
  if (state.unsigned) return { ring: undefined };
  return state.ring ? { ring: state.ring } : { missing: true };
}

/** The kid of the ring's previous key, when it is another key than the current one. */
function previousKid(ring: KeyRing | undefined): string | undefined {
  return ring?.previous && ring.previous.kid !== ring.current.kid ? ring.previous.kid : undefined;
}

/** Whether a build carries the archives of exactly this ring (the current key's, and the previous key's during a rotation). */
export function signedByRing(built: BuiltBundle, ring: KeyRing | undefined): boolean {
  return built.kid === ring?.current.kid && built.previous?.kid === previousKid(ring);
}

/** Whether a build's revision is the one this ring gives (its current key): only the previous key's archive may differ. */
export function sameCurrentKey(built: BuiltBundle, ring: KeyRing | undefined): boolean {
  return built.kid === ring?.current.kid;
}

/**
 * The Signed condition: True/Signed naming the key (and the previous one during a rotation),
 * True/KeyRejected while the source's key is bad and the last good one signs, False/Unsigned with
 * --unsigned-bundles, False/NoSigningKey while no good key was ever read (nothing is served then).
 */
export function signedCondition(state: SigningState, built: BuiltBundle | undefined): ConditionInput {
  if (state.unsigned) {
    return {
      type: 'Signed',
      status: false,
      reason: 'Unsigned',
      message: 'Bundles are served unsigned (--unsigned-bundles): OPA verifies nothing it downloads',
    };
  }
  if (!state.ring) {
    return {
      type: 'Signed',
      status: false,
      reason: 'NoSigningKey',
      message: `No signing key has been read${state.problem ? ` (${state.problem})` : ''}: nothing is served for this bundle until one is`,
    };
  }
  const kid = built?.kid ?? state.ring.current.kid;
  const previous = built ? built.previous?.kid : previousKid(state.ring);
  const revision = built ? `Revision ${built.revision} is signed` : 'Bundles are signed';
  const signing = `${revision} by key ${kid}${previous ? `, and by the previous key ${previous} for the OPAs still pinned to it` : ''}`;
  if (state.problem) {
    return {
      type: 'Signed',
      status: true,
      reason: 'KeyRejected',
      message: `${state.problem}; the last good key ${state.ring.current.kid} keeps signing. ${signing}`,
    };
  }
  return { type: 'Signed', status: true, reason: 'Signed', message: signing };
}
