// What status reads of shadow decisions (ShadowView): this replica's ledger and the tallies peers
// share (Kubernetes: their sharing ConfigMaps), summed per rule by merge.ts. It also says which
// rules' counts moved, so the modes enqueue only those (at most every SHADOW_ENQUEUE_MS).
import type { RuleShadowStatus } from '../api/index.ts';
import { type LiveTally, mergeShadow } from './merge.ts';
import type { ShadowLedger, ShadowRole, ShadowTally } from './types.ts';

/** Shortest time between two passes that enqueue the rules whose tallies changed. */
export const SHADOW_ENQUEUE_MS = 10_000;

/**
 * How long a session's last shared tallies are still summed after it went (its ConfigMap deleted at
 * a stop, or replaced by a new session of a pod restarted under its name): many passes, so what it
 * counted after the last one reaches status. Summing them again adds nothing (status records what
 * each session had when last summed).
 */
const DEPARTED_MS = 10 * 60_000;

/** One replica's tallies as it shares them with its peers. */
export interface SharedTallies {
  readonly session: string;
  readonly tallies: readonly { readonly tenant: string; readonly rule: string; readonly tally: ShadowTally }[];
}

/** The controller's ShadowView, fed by peers, telling which rules changed. */
export interface ShadowHub {
  statusOf(
    tenant: string,
    rule: string,
    role: ShadowRole | undefined,
    generation: number,
    recorded: RuleShadowStatus | undefined,
  ): RuleShadowStatus | undefined;
  /** A peer replica's tallies (undefined: it stopped sharing); the rules whose counts moved are marked changed. */
  setPeer(replica: string, shared: SharedTallies | undefined): void;
  /** This replica's tallies, to share with peers. */
  local(): SharedTallies;
  /**
   * `<tenant>/<rule>` of the rules whose counts changed, here or at a peer, since the last call; `local`: some changed here.
   * Their next statusOf takes the counts of now; any other keeps the recorded ones for SHADOW_ENQUEUE_MS.
   */
  takeChanged(): { readonly rules: readonly string[]; readonly local: boolean };
}

const keyOf = (tenant: string, rule: string): string => `${tenant}/${rule}`;

function sameTally(a: ShadowTally | undefined, b: ShadowTally | undefined): boolean {
  return (
    a?.role === b?.role && a?.evaluated === b?.evaluated && a?.matched === b?.matched && a?.flips === b?.flips && a?.firstMs === b?.firstMs
  );
}

/** A ShadowView over this replica's ledger and what peers share; `now` in ms (the `since` of a count that starts). */
export function createShadowView(o: { readonly ledger: ShadowLedger; readonly now: () => number }): ShadowHub {
  const { ledger } = o;
  const peers = new Map<string, { readonly session: string; readonly tallies: ReadonlyMap<string, ShadowTally> }>();
  /** Sessions that went, by session: their last tallies and until when they are summed. */
  const departed = new Map<string, { readonly tallies: ReadonlyMap<string, ShadowTally>; readonly untilMs: number }>();
  const forgetDeparted = (nowMs: number): void => {
    for (const [session, d] of departed) if (d.untilMs <= nowMs) departed.delete(session);
  };
  const changed = new Set<string>();
  /** Rules the last takeChanged() named (the pass that enqueues them): their next status takes the counts now. */
  const due = new Set<string>();
  /** When each rule's counts were last taken into its status. */
  const taken = new Map<string, number>();
  return {
    statusOf(tenant, rule, role, generation, recorded) {
      const key = keyOf(tenant, rule);
      if (role === undefined) {
        due.delete(key);
        taken.delete(key);
        return undefined;
      }
      // Any other reconcile (the echo of our own status write, above all: under traffic its counts
      // have moved, so it would write again, and its echo again) keeps the recorded counts, until the
      // pass names the rule or SHADOW_ENQUEUE_MS went by.
      const nowMs = o.now();
      const takenMs = taken.get(key);
      const current = recorded !== undefined && recorded.role === role && recorded.observedGeneration === generation;
      if (current && !due.has(key) && takenMs !== undefined && nowMs - takenMs < SHADOW_ENQUEUE_MS) return recorded;
      due.delete(key);
      taken.set(key, nowMs);
      const live: LiveTally[] = [];
      const own = ledger.tally(tenant, rule);
      if (own) live.push({ session: ledger.session, tally: own });
      for (const peer of peers.values()) {
        const tally = peer.tallies.get(key);
        if (tally && peer.session !== ledger.session) live.push({ session: peer.session, tally });
      }
      forgetDeparted(nowMs);
      for (const [session, d] of departed) {
        const tally = d.tallies.get(key);
        if (tally && session !== ledger.session) live.push({ session, tally });
      }
      return mergeShadow({ role, generation, recorded, live, nowMs });
    },
    setPeer(replica, shared) {
      const before = peers.get(replica);
      const after = shared && { session: shared.session, tallies: new Map(shared.tallies.map((t) => [keyOf(t.tenant, t.rule), t.tally])) };
      for (const [key, tally] of before?.tallies ?? []) if (!sameTally(tally, after?.tallies.get(key))) changed.add(key);
      for (const [key, tally] of after?.tallies ?? []) if (!sameTally(tally, before?.tallies.get(key))) changed.add(key);
      // A session that goes leaves its last tallies to be summed: the leader's next pass may be 10 s away.
      if (before && before.session !== after?.session)
        departed.set(before.session, { tallies: before.tallies, untilMs: o.now() + DEPARTED_MS });
      if (after) departed.delete(after.session);
      forgetDeparted(o.now());
      if (after) peers.set(replica, after);
      else peers.delete(replica);
    },
    local() {
      return { session: ledger.session, tallies: [...ledger.all()] };
    },
    takeChanged() {
      const own = ledger.takeChanged();
      const rules = [...new Set([...own, ...changed])];
      changed.clear();
      for (const key of rules) due.add(key);
      return { rules, local: own.length > 0 };
    },
  };
}
