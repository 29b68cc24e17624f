// Which key each agent verifies bundles with, and what a key rotation waits for: the KeyRotated
// condition of a Bundle, and whether the previous key can be retired (every agent of every bundle
// verifies with the current one). An OPA verifies with exactly the key its configuration pins
// (opa#8531), and tells us which in its status report's `acl-signing-key` label. Pure: the caller
// passes the agents, the kids and the time; no private key ever comes here, only kids.
import { PROBLEMS_NAMED, type Agent } from './agents.ts';
import { SIGNING_KEY_LABEL } from './report.ts';

/** The keys that sign bundles now, by kid, as the mode's key source holds them. */
export type KeysInUse =
  /** --unsigned-bundles. */
  | { readonly kind: 'unsigned' }
  /** No good key was ever read: nothing is served. */
  | { readonly kind: 'none' }
  | { readonly kind: 'signed'; readonly current: string; readonly previous: string | undefined };

/** A signing state's kids (the controller's SigningState, read structurally: only `kid` is taken). */
export function keysInUse(
  s:
    | { readonly unsigned: true }
    | {
        readonly unsigned: false;
        readonly ring: { readonly current: { readonly kid: string }; readonly previous?: { readonly kid: string } | undefined } | undefined;
      },
): KeysInUse {
  if (s.unsigned) return { kind: 'unsigned' };
  if (s.ring === undefined) return { kind: 'none' };
  return { kind: 'signed', current: s.ring.current.kid, previous: s.ring.previous?.kid };
}

export interface KeyRotatedCondition {
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: 'OneKey' | 'Rotating' | 'AgentsMoved' | 'Unsigned' | 'NoSigningKey';
  readonly message: string;
}

/** How many agents verify with one kid (undefined: no label). */
export interface KeyCount {
  readonly kid: string | undefined;
  readonly agents: number;
}

/** Agents counted by the kid they verify with: most first, then by kid; no label last. */
export function keyCounts(agents: readonly Agent[]): KeyCount[] {
  const n = new Map<string | undefined, number>();
  for (const a of agents) n.set(a.signingKey, (n.get(a.signingKey) ?? 0) + 1);
  return [...n.entries()]
    .map(([kid, count]) => ({ kid, agents: count }))
    .sort((a, b) =>
      a.kid === undefined || b.kid === undefined
        ? Number(a.kid === undefined) - Number(b.kid === undefined)
        : b.agents - a.agents || (a.kid < b.kid ? -1 : 1),
    );
}

/** Why an agent without the label is not known to verify with any key. */
export const NO_LABEL = `no ${SIGNING_KEY_LABEL} label: started from a configuration acl-operator did not print`;

/** An agent not on the current key, as a person reads it: `opa-1 (acl-…)`, or why it names none. */
export function describeKeyOf(a: Agent): string {
  return `${a.id} (${a.signingKey ?? NO_LABEL})`;
}

/** The agents not on `currentKid`, by id, and the first PROBLEMS_NAMED of them as a person reads them. */
function notOn(agents: readonly Agent[], currentKid: string): { readonly count: number; readonly named: string } {
  const others = agents.filter((a) => a.signingKey !== currentKid).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const more = others.length - PROBLEMS_NAMED;
  const named = others.slice(0, PROBLEMS_NAMED).map(describeKeyOf).join(', ');
  return { count: others.length, named: more > 0 ? `${named} and ${more} more` : named };
}

/**
 * KeyRotated from a bundle's agents heard within the window: True/OneKey while one key signs, False/
 * Rotating while a previous key signs too and some agent verifies with another key or names none
 * (at most PROBLEMS_NAMED named), True/AgentsMoved once every agent verifies with the current key.
 */
export function keyRotatedCondition(agents: readonly Agent[], currentKid: string, previousKid?: string): KeyRotatedCondition {
  const off = notOn(agents, currentKid);
  const on = agents.length - off.count;
  if (previousKid === undefined) {
    if (agents.length === 0) return { status: 'True', reason: 'OneKey', message: `${currentKid} signs alone; no agent reports` };
    if (off.count === 0)
      return { status: 'True', reason: 'OneKey', message: `${currentKid} signs alone; every agent (${on}) verifies with it` };
    // Nothing to rotate; still, these agents get no new revision until they verify with the key that signs.
    return {
      status: 'True',
      reason: 'OneKey',
      message: `${currentKid} signs alone; ${on} of ${agents.length} agents verify with it, not ${off.named}: restart them with the configuration acl-operator prints now`,
    };
  }
  if (off.count === 0) {
    return {
      status: 'True',
      reason: 'AgentsMoved',
      message:
        agents.length === 0
          ? `${currentKid} signs, ${previousKid} too until it is retired; no agent reports, so none waits for ${previousKid}`
          : `Every agent (${on}) verifies with ${currentKid}; ${previousKid} is retired once every bundle's agents do`,
    };
  }
  return {
    status: 'False',
    reason: 'Rotating',
    message: `${on} of ${agents.length} agents verify with ${currentKid}; waiting for ${off.named}: restart them with the configuration that pins ${currentKid}`,
  };
}

/** KeyRotated for the keys in use: Unsigned with --unsigned-bundles, Unknown while no key ever signed. */
export function keyRotated(agents: readonly Agent[], keys: KeysInUse): KeyRotatedCondition {
  if (keys.kind === 'unsigned') {
    return { status: 'True', reason: 'Unsigned', message: 'Bundles are served unsigned (--unsigned-bundles): no key to rotate' };
  }
  if (keys.kind === 'none') {
    return { status: 'Unknown', reason: 'NoSigningKey', message: 'No signing key was ever read: nothing is signed or served yet' };
  }
  return keyRotatedCondition(agents, keys.current, keys.previous);
}

/** Whether the previous key can go, and if not, whom it waits for. */
export interface Retirement {
  readonly due: boolean;
  /** Agents heard within the window over all bundles (an agent of two bundles counts twice). */
  readonly agents: number;
  /** The first PROBLEMS_NAMED agents not on the current key, as `<tenant>/<bundle> <id> (<kid or why none>)`. */
  readonly waitingFor: readonly string[];
  /** How many agents are not on the current key. */
  readonly waiting: number;
  /** Why it is not due (a log line's field); undefined when due. */
  readonly reason: string | undefined;
}

/** A bundle's agents heard within the window at `nowMs`. */
export interface AgentsOf {
  readonly windowMs: number;
  agents(tenant: string, bundle: string, nowMs: number): readonly Agent[];
  /** When a peer replica went away with the agents it heard (they report here at their next poll). */
  peerGoneMs?(): number | undefined;
}

/**
 * Whether the previous key can be retired: every agent heard within the window, of every bundle,
 * verifies with `currentKid`. Never before the fleet has been heard for a whole window
 * (`listeningSinceMs`: when this process began taking status reports): right after a start the
 * registry is empty, and an empty registry is not an agent-free fleet. Nor for a whole window after a
 * peer replica went away with the agents it heard (`registry.peerGoneMs`): they report here only at
 * their next poll, and one of them may still verify with the previous key.
 */
export function retirementDue(
  registry: AgentsOf,
  bundles: Iterable<{ readonly tenant: string; readonly name: string }>,
  currentKid: string,
  nowMs: number,
  listeningSinceMs: number,
): Retirement {
  let agents = 0;
  let waiting = 0;
  const waitingFor: string[] = [];
  for (const b of bundles) {
    for (const a of registry.agents(b.tenant, b.name, nowMs)) {
      agents++;
      if (a.signingKey === currentKid) continue;
      waiting++;
      if (waitingFor.length < PROBLEMS_NAMED) waitingFor.push(`${b.tenant}/${b.name} ${describeKeyOf(a)}`);
    }
  }
  // A peer replica gone with its agents: those not yet heard here are unknown for a whole window.
  const heardMs = nowMs - Math.max(listeningSinceMs, registry.peerGoneMs?.() ?? -Infinity);
  const reason =
    waiting > 0
      ? `${waiting} of ${agents} agents do not verify with ${currentKid}`
      : heardMs < registry.windowMs
        ? `status reports heard for ${Math.floor(heardMs / 1000)} s of the ${Math.round(registry.windowMs / 1000)} s window: an agent may not have reported yet`
        : undefined;
  return { due: reason === undefined, agents, waitingFor, waiting, reason };
}
