// The keys bundles are signed with, as a mode's source holds them (Kubernetes: a Secret; standalone:
// the state folder), handed to the controller through one holder: every Bundle is reconciled again
// when it changes. A key that breaks never empties the ring: the source keeps the last good one and
// says what is wrong in `problem`, so nothing is ever served unsigned because a key broke.
import type { KeyRing } from '../signing/index.ts';

export type SigningState =
  /** --unsigned-bundles: archives hold `.manifest` and `policy.rego` only. */
  | { readonly unsigned: true }
  | {
      readonly unsigned: false;
      /** The keys that sign; undefined while no good key was ever read (then no bundle is served). */
      readonly ring: KeyRing | undefined;
      /** Why the key the source holds now does not sign (worded for a condition and a log line); undefined when it does. */
      readonly problem: string | undefined;
    };

export interface SigningHolder {
  get(): SigningState;
  /** Replaces the state; listeners are called when the ring, the problem or the mode changed. */
  set(state: SigningState): void;
  onChange(listener: () => void): () => void;
}

/** What distinguishes two states for the controller: the mode, the kids of the ring in order, the problem. */
export function signingFingerprint(s: SigningState): string {
  if (s.unsigned) return 'unsigned';
  const ring = s.ring ? [s.ring.current.kid, s.ring.previous?.kid ?? ''].join(',') : 'none';
  return `signed:${ring}:${s.problem ?? ''}`;
}

export function createSigningHolder(initial: SigningState): SigningHolder {
  let state = initial;
  const listeners = new Set<() => void>();
  return {
    get: () => state,
    set(next) {
      const changed = signingFingerprint(next) !== signingFingerprint(state);
      state = next;
      if (changed) for (const l of [...listeners]) l();
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
