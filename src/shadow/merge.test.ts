import { describe, expect, it } from 'vitest';
import { rng } from '../../test/support/corpus.ts';
import { RuleShadowStatus } from '../api/index.ts';
import { type LiveTally, mergeShadow, shadowSummary } from './merge.ts';
import type { ShadowExample, ShadowRole, ShadowTally } from './types.ts';

const T0 = Date.parse('2026-11-28T10:00:00Z');

function tally(evaluated: number, flips = 0, o: Partial<ShadowTally> = {}): ShadowTally {
  return {
    role: 'Proposed',
    evaluated,
    matched: flips,
    flips,
    firstMs: evaluated > 0 ? T0 + 1000 : undefined,
    lastMs: evaluated > 0 ? T0 + 2000 : undefined,
    lastFlipMs: flips > 0 ? T0 + 1500 : undefined,
    examples: [],
    ...o,
  };
}

const merge = (
  recorded: RuleShadowStatus | undefined,
  live: readonly LiveTally[],
  o: { role?: ShadowRole; generation?: number; nowMs?: number } = {},
) => mergeShadow({ role: o.role ?? 'Proposed', generation: o.generation ?? 1, recorded, live, nowMs: o.nowMs ?? T0 });

describe('the summary of a rule', () => {
  it('says what a Proposed rule would allow and a removal would deny, with thousands separated', () => {
    expect(shadowSummary('Proposed', 12, 3400)).toBe('would allow 12 of 3,400');
    expect(shadowSummary('Removal', 5, 880)).toBe('would deny 5 of 880');
    expect(shadowSummary('Proposed', 0, 0)).toBe('no live decisions yet');
    expect(shadowSummary('Removal', 1_234_567, 9_999_999)).toBe('would deny 1,234,567 of 9,999,999');
  });
});

describe('status.shadow summed over replica sessions', () => {
  it('starts at zero for a rule nothing was recorded for, and sums the sessions counted since', () => {
    const start = merge(undefined, []);
    expect(start).toMatchObject({ role: 'Proposed', summary: 'no live decisions yet', evaluated: 0, flips: 0, observedGeneration: 1 });
    const later = merge(start, [
      { session: 'a-1', tally: tally(10, 2) },
      { session: 'b-1', tally: tally(5, 1) },
    ]);
    expect(later).toMatchObject({ evaluated: 15, matched: 3, flips: 3, summary: 'would allow 3 of 15' });
  });

  it('keeps the counts of a session that ended and adds a restarted one from zero', () => {
    let s = merge(undefined, []);
    s = merge(s, [{ session: 'a-1', tally: tally(7, 1) }]);
    // The process restarts: a new session, the old one no longer live.
    s = merge(s, [{ session: 'a-2', tally: tally(3) }]);
    expect(s.evaluated).toBe(10);
    s = merge(s, [{ session: 'a-2', tally: tally(4) }]);
    expect(s.evaluated).toBe(11);
    expect(s.replicas?.map((r) => r.session.split('~')[0]).sort()).toEqual(['a-1', 'a-2']);
  });

  it('counts a session out of sight for a while (a peer not yet read) once when it comes back', () => {
    let s = merge(undefined, []);
    s = merge(s, [{ session: 'b-1', tally: tally(20) }]);
    s = merge(s, []);
    s = merge(s, [{ session: 'b-1', tally: tally(25) }]);
    expect(s.evaluated).toBe(25);
  });

  it('starts again at zero for a new generation, not counting what a replica still holds of the spec before', () => {
    let s = merge(undefined, []);
    s = merge(s, [{ session: 'a-1', tally: tally(40, 4) }]);
    s = merge(s, [{ session: 'a-1', tally: tally(40, 4) }], { generation: 2, nowMs: T0 + 10_000 });
    expect(s).toMatchObject({ evaluated: 0, flips: 0, observedGeneration: 2, since: new Date(T0 + 10_000).toISOString() });
    // The replica still counts under the old spec for a moment, then starts its tally again.
    s = merge(s, [{ session: 'a-1', tally: tally(40, 4) }], { generation: 2 });
    expect(s.evaluated).toBe(0);
    s = merge(s, [{ session: 'a-1', tally: tally(6, 1, { firstMs: T0 + 11_000, lastMs: T0 + 12_000 }) }], { generation: 2 });
    expect(s).toMatchObject({ evaluated: 6, flips: 1, firstTime: new Date(T0 + 11_000).toISOString() });
  });

  it('starts again at zero when the role changes, and ignores tallies counted for the other role', () => {
    let s = merge(undefined, []);
    s = merge(s, [{ session: 'a-1', tally: tally(9, 3) }]);
    s = merge(s, [{ session: 'a-1', tally: tally(9, 3) }], { role: 'Removal' });
    expect(s).toMatchObject({ role: 'Removal', evaluated: 0, summary: 'no live decisions yet' });
    s = merge(s, [{ session: 'a-1', tally: tally(2, 1, { role: 'Removal' }) }], { role: 'Removal' });
    expect(s).toMatchObject({ evaluated: 2, flips: 1, summary: 'would deny 1 of 2' });
  });

  it('takes the earliest first time, the latest last times, and the first three examples by time', () => {
    const ex = (s: number): ShadowExample => ({ time: new Date(T0 + s * 1000).toISOString(), input: `{"n":${s}}` });
    let s = merge(undefined, [], { nowMs: T0 });
    s = merge(s, [
      { session: 'a-1', tally: tally(3, 2, { firstMs: T0 + 5000, lastMs: T0 + 9000, lastFlipMs: T0 + 8000, examples: [ex(6), ex(8)] }) },
      {
        session: 'b-1',
        tally: tally(4, 3, { firstMs: T0 + 2000, lastMs: T0 + 7000, lastFlipMs: T0 + 7000, examples: [ex(3), ex(4), ex(7)] }),
      },
    ]);
    expect(s).toMatchObject({
      firstTime: new Date(T0 + 2000).toISOString(),
      lastTime: new Date(T0 + 9000).toISOString(),
      lastFlipTime: new Date(T0 + 8000).toISOString(),
    });
    expect(s.examples).toEqual([ex(3), ex(4), ex(6)]);
    // The same examples seen again are not listed twice.
    s = merge(s, [{ session: 'b-1', tally: tally(5, 4, { examples: [ex(3), ex(4), ex(7)], lastFlipMs: T0 + 9500 }) }]);
    expect(s.examples).toEqual([ex(3), ex(4), ex(6)]);
  });

  it('takes a tally behind what was summed of it (an older copy read late) as no news', () => {
    let s = merge(undefined, []);
    s = merge(s, [{ session: 'b-1', tally: tally(30, 3) }]);
    s = merge(s, [{ session: 'b-1', tally: tally(20, 2) }]);
    expect(s).toMatchObject({ evaluated: 30, flips: 3 });
    s = merge(s, [{ session: 'b-1', tally: tally(31, 3) }]);
    expect(s).toMatchObject({ evaluated: 31, flips: 3 });
  });

  it('names a session of a very long host name within the schema, still telling runs apart', () => {
    const host = 'h'.repeat(250);
    let s = merge(undefined, []);
    s = merge(s, [{ session: `${host}-a1`, tally: tally(2) }]);
    s = merge(s, [{ session: `${host}-a2`, tally: tally(3) }]);
    expect(s.evaluated).toBe(5);
    expect(s.replicas?.every((r) => r.session.length <= 128)).toBe(true);
    expect(RuleShadowStatus.safeParse(s).success).toBe(true);
  });

  it('keeps at most 64 sessions listed, letting go of ended ones first, and the totals do not move', () => {
    let s = merge(undefined, []);
    for (let i = 0; i < 100; i++) s = merge(s, [{ session: `r-${i}`, tally: tally(1) }]);
    expect(s.evaluated).toBe(100);
    expect(s.replicas).toHaveLength(64);
    expect(s.replicas?.at(-1)?.session).toMatch(/^r-99~/);
  });

  it('never counts a session twice when more than 64 are live at once (a large rollout): the ones past the bound wait', () => {
    const live = (n: number, each: number): LiveTally[] => Array.from({ length: n }, (_, i) => ({ session: `r-${i}`, tally: tally(each) }));
    let s = merge(undefined, []);
    for (let pass = 0; pass < 3; pass++) {
      s = merge(s, live(70, 1));
      expect(s.replicas?.length).toBeLessThanOrEqual(64);
      // What the list records is what the totals hold: each listed session's counts once.
      expect(s.evaluated).toBe((s.replicas ?? []).reduce((sum, r) => sum + r.evaluated, 0));
    }
    expect(s.evaluated).toBe(64);
    // The first ten go; the 54 listed count one more each, and the six that waited are summed whole.
    s = merge(s, live(70, 2).slice(10));
    expect(s.evaluated).toBe(64 + 54 + 6 * 2);
    expect(RuleShadowStatus.safeParse(s).success).toBe(true);
  });
});

/**
 * Replica sessions count decisions while sessions start, end, restart, go out of sight and come
 * back, their ledgers start again, and the leader changes (each summing begins from what the last
 * leader recorded, seeing the sessions it sees). The totals are always exactly what every session counted up to the last time it
 * was seen: nothing twice, nothing lost.
 */
describe('status.shadow under random sessions, restarts and leader changes', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`never counts twice nor loses counts (seed ${seed})`, () => {
      const random = rng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
      interface Session {
        readonly id: string;
        ended: boolean;
        visible: boolean;
        /** The ledger's tally now, and the part of it each summing has credited so far. */
        evaluated: number;
        flips: number;
        seenEvaluated: number;
        seenFlips: number;
        /** Credited in earlier runs of its ledger (before it started again). */
        creditedEvaluated: number;
        creditedFlips: number;
        /** When its ledger's tally began. */
        firstMs: number;
      }
      const sessions: Session[] = [];
      let next = 0;
      const start = (): void => {
        sessions.push({
          id: `replica-${next % 3}-${(next++).toString(36)}`,
          ended: false,
          visible: true,
          evaluated: 0,
          flips: 0,
          seenEvaluated: 0,
          seenFlips: 0,
          creditedEvaluated: 0,
          creditedFlips: 0,
          firstMs: T0 + next,
        });
      };
      start();
      let recorded = merge(undefined, []);
      for (let step = 0; step < 600; step++) {
        const r = random();
        const alive = sessions.filter((x) => !x.ended);
        if (r < 0.55 && alive.length > 0) {
          const x = pick(alive);
          const n = 1 + Math.floor(random() * 5);
          x.evaluated += n;
          x.flips += Math.floor(random() * (n + 1));
        } else if (r < 0.62 && alive.length < 6) start();
        else if (r < 0.67 && alive.length > 0) pick(alive).ended = true;
        else if (r < 0.75 && sessions.length > 0) {
          const x = pick(sessions);
          x.visible = !x.visible;
        } else if (r < 0.78 && alive.length > 0) {
          // A ledger starts its tally again: what it counted since it was last summed is gone with it.
          const x = pick(alive);
          x.creditedEvaluated += x.seenEvaluated;
          x.creditedFlips += x.seenFlips;
          x.evaluated = x.flips = x.seenEvaluated = x.seenFlips = 0;
          x.firstMs = T0 + 1000 + step;
        } else {
          // Whichever replica leads sums from the status as recorded, seeing the sessions it sees.
          const live = sessions.filter((x) => !x.ended && x.visible);
          const made = merge(
            recorded,
            live.map((x) => ({ session: x.id, tally: tally(x.evaluated, x.flips, { firstMs: x.evaluated > 0 ? x.firstMs : undefined }) })),
          );
          for (const x of live) {
            x.seenEvaluated = x.evaluated;
            x.seenFlips = x.flips;
          }
          recorded = made;
          const evaluated = sessions.reduce((a, x) => a + x.creditedEvaluated + x.seenEvaluated, 0);
          const flips = sessions.reduce((a, x) => a + x.creditedFlips + x.seenFlips, 0);
          expect({ evaluated: recorded.evaluated, flips: recorded.flips }).toEqual({ evaluated, flips });
        }
      }
    });
  }
});

describe('status.shadow recorded with times that do not read (a state folder edited by hand)', () => {
  it('still sums: the counts kept, the unreadable times left out or taken from now', () => {
    const recorded: RuleShadowStatus = {
      role: 'Proposed',
      summary: 'would allow 1 of 10',
      observedGeneration: 1,
      since: 'yesterday',
      evaluated: 10,
      matched: 1,
      flips: 1,
      firstTime: 'soon',
      lastTime: '',
      lastFlipTime: 'never',
    };
    const next = merge(recorded, [{ session: 'a', tally: tally(5, 1) }], { nowMs: T0 });
    expect(next).toMatchObject({ since: new Date(T0).toISOString(), evaluated: 15, flips: 2, lastTime: new Date(T0 + 2000).toISOString() });
  });
});
