// A ShadowLedger whose tallies a test sets: status, sharing and the modes read it as they read the real one.
import type { ShadowLedger, ShadowTally } from '../../src/shadow/types.ts';

/** A ledger holding the tallies `set` gives it; `observe` counts nothing. */
export interface FakeLedger extends ShadowLedger {
  set(tenant: string, rule: string, tally: ShadowTally | undefined): void;
}

export function fakeLedger(session: string): FakeLedger {
  const tallies = new Map<string, { tenant: string; rule: string; tally: ShadowTally }>();
  let changed = new Set<string>();
  return {
    session,
    observe: () => undefined,
    tally: (tenant, rule) => tallies.get(`${tenant}/${rule}`)?.tally,
    all: () => [...tallies.values()],
    takeChanged() {
      const out = [...changed];
      changed = new Set();
      return out;
    },
    set(tenant, rule, tally) {
      const key = `${tenant}/${rule}`;
      if (tally) tallies.set(key, { tenant, rule, tally });
      else tallies.delete(key);
      changed.add(key);
    },
  };
}

/** A Proposed tally of `evaluated` decisions, `flips` of them flipped, counted from `firstMs`. */
export function proposedTally(evaluated: number, flips: number, firstMs = Date.parse('2026-11-28T10:00:00Z')): ShadowTally {
  return {
    role: 'Proposed',
    evaluated,
    matched: flips,
    flips,
    firstMs: evaluated > 0 ? firstMs : undefined,
    lastMs: evaluated > 0 ? firstMs + evaluated : undefined,
    lastFlipMs: flips > 0 ? firstMs + flips : undefined,
    examples: [],
  };
}
