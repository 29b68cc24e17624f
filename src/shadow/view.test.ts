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
});
