import { describe, expect, it } from 'vitest';
import { fakeLedger, proposedTally } from '../../test/support/shadow.ts';
import { createShadowView } from './view.ts';

const NOW = Date.parse('2026-11-28T11:00:00Z');

describe('the shadow view', () => {
  it("sums this replica's tally and every peer's, each session once", () => {
    const ledger = fakeLedger('op-a-1');
    const view = createShadowView({ ledger, now: () => NOW });
    const start = view.statusOf('acme', 'r', 'Proposed', 3, undefined);
    ledger.set('acme', 'r', proposedTally(10, 2));
    view.setPeer('op-b', { session: 'op-b-1', tallies: [{ tenant: 'acme', rule: 'r', tally: proposedTally(5, 1) }] });
    // A peer ConfigMap naming this replica's own session (an earlier write of it) is not counted again.
    view.setPeer('op-a', { session: 'op-a-1', tallies: [{ tenant: 'acme', rule: 'r', tally: proposedTally(10, 2) }] });
    // The 10 s pass names the rule: its status takes the counts of now.
    expect(view.takeChanged().rules).toEqual(['acme/r']);
    expect(view.statusOf('acme', 'r', 'Proposed', 3, start)).toMatchObject({ evaluated: 15, flips: 3, summary: 'would allow 3 of 15' });
  });

  it('has nothing to say of a rule that is neither Proposed nor marked for removal', () => {
    const view = createShadowView({ ledger: fakeLedger('s'), now: () => NOW });
    expect(view.statusOf('acme', 'r', undefined, 1, undefined)).toBeUndefined();
  });

  it('names the rules whose counts moved, here or at a peer, once', () => {
    const ledger = fakeLedger('op-a-1');
    const view = createShadowView({ ledger, now: () => NOW });
    ledger.set('acme', 'r', proposedTally(1, 0));
    view.setPeer('op-b', { session: 'op-b-1', tallies: [{ tenant: 'acme', rule: 'p', tally: proposedTally(2, 0) }] });
    expect(view.takeChanged()).toEqual({ rules: ['acme/r', 'acme/p'], local: true });
    // The same tallies shared again: nothing moved.
    view.setPeer('op-b', { session: 'op-b-1', tallies: [{ tenant: 'acme', rule: 'p', tally: proposedTally(2, 0) }] });
    expect(view.takeChanged()).toEqual({ rules: [], local: false });
    view.setPeer('op-b', undefined);
    expect(view.takeChanged()).toEqual({ rules: ['acme/p'], local: false });
  });

  it('sums what a peer counted after the last pass when it stops, or restarts under the same name, before the next pass', () => {
    let now = NOW;
    const view = createShadowView({ ledger: fakeLedger('op-a-1'), now: () => now });
    const shared = (session: string, evaluated: number, flips: number) => ({
      session,
      tallies: [{ tenant: 'acme', rule: 'r', tally: proposedTally(evaluated, flips) }],
    });
    const start = view.statusOf('acme', 'r', 'Proposed', 3, undefined);
    view.setPeer('op-b', shared('op-b-1', 10, 1));
    view.takeChanged();
    const first = view.statusOf('acme', 'r', 'Proposed', 3, start);
    expect(first).toMatchObject({ evaluated: 10, flips: 1 });
    // op-b counts 15 more and shares them; it stops (a rolling update deletes its ConfigMap) before the leader's next pass.
    view.setPeer('op-b', shared('op-b-1', 25, 3));
    view.setPeer('op-b', undefined);
    now += 10_000;
    const second = view.statusOf('acme', 'r', 'Proposed', 3, first);
    expect(second).toMatchObject({ evaluated: 25, flips: 3 });
    // A pod of a StatefulSet comes back under its name with a new session: the old one's last counts are summed too.
    view.setPeer('op-b', shared('op-b-2', 4, 0));
    view.setPeer('op-b', shared('op-b-2', 6, 0));
    view.setPeer('op-c', shared('op-c-1', 7, 0));
    view.setPeer('op-c', shared('op-c-5', 1, 0));
    now += 10_000;
    const third = view.statusOf('acme', 'r', 'Proposed', 3, second);
    expect(third).toMatchObject({ evaluated: 39, flips: 3 });
    // Summing again, and after the departed sessions are forgotten: nothing counted twice, nothing lost.
    expect(view.statusOf('acme', 'r', 'Proposed', 3, third)).toEqual(third);
    now += 3_600_000;
    expect(view.statusOf('acme', 'r', 'Proposed', 3, third)).toMatchObject({ evaluated: 39, flips: 3 });
  });
});
