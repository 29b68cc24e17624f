// status.shadow of Rules: written by the rule's reconcile from the shadow view, for Proposed rules and
// Enforced rules marked for removal only; counts kept across a restart, started again on a spec edit.
import { describe, expect, it } from 'vitest';
import { fakeSource, NS, RULE_SPEC, sourceObject, startController } from '../../test/support/controller.ts';
import { fakeLedger, proposedTally } from '../../test/support/shadow.ts';
import { createShadowView } from '../shadow/index.ts';

const NOW = new Date('2026-11-28T11:00:00Z');
const PROPOSED = { ...RULE_SPEC, state: 'Proposed' };
const MARK = 'acl.policyagent.dev/proposed-state';

function setup(objects = [sourceObject('Rule', 'p', PROPOSED)], session = 'op-a-1') {
  const source = fakeSource(objects);
  const ledger = fakeLedger(session);
  const clock = { ms: NOW.getTime() };
  const shadow = createShadowView({ ledger, now: () => clock.ms });
  const run = startController(source, { shadow, now: () => new Date(clock.ms) });
  /** The 10 s pass (modes/shadow-status.ts): the rules whose counts moved are reconciled. */
  const pass = async (): Promise<void> => {
    const { rules } = shadow.takeChanged();
    await run.drain(rules.map((r) => ({ kind: 'Rule' as const, namespace: r.split('/')[0] ?? '', name: r.split('/')[1] ?? '' })));
  };
  return { source, ledger, shadow, run, pass, clock };
}

describe('status.shadow of a Rule', () => {
  it("shows a Proposed rule's counts, and a summary saying what it would allow", async () => {
    const { source, ledger, run, pass } = setup();
    await run.drain();
    expect(source.status('Rule', 'p')?.['shadow']).toMatchObject({ role: 'Proposed', summary: 'no live decisions yet', evaluated: 0 });
    ledger.set(NS, 'p', proposedTally(3400, 12));
    await pass();
    expect(source.status('Rule', 'p')?.['shadow']).toMatchObject({
      evaluated: 3400,
      flips: 12,
      summary: 'would allow 12 of 3,400',
      observedGeneration: 1,
    });
  });

  it('shows a removal for an Enforced rule marked to leave, and nothing for an unmarked one', async () => {
    const { source, ledger, run } = setup([
      sourceObject('Rule', 'going', RULE_SPEC, { annotations: { [MARK]: 'Suspended' } }),
      sourceObject('Rule', 'staying', RULE_SPEC),
    ]);
    ledger.set(NS, 'going', { ...proposedTally(880, 5), role: 'Removal' });
    await run.drain();
    await run.drain();
    expect(source.status('Rule', 'going')?.['shadow']).toMatchObject({ role: 'Removal' });
    expect(source.status('Rule', 'staying')?.['shadow']).toBeUndefined();
  });

  it('shows nothing for a mark that is not a state leaving Enforced, nor on a rule not in force', async () => {
    const { source, run } = setup([
      sourceObject('Rule', 'odd', RULE_SPEC, { annotations: { [MARK]: 'Gone' } }),
      sourceObject('Rule', 'draft', { ...RULE_SPEC, state: 'Draft' }, { annotations: { [MARK]: 'Suspended' } }),
    ]);
    await run.drain();
    expect(source.status('Rule', 'odd')?.['shadow']).toBeUndefined();
    expect(source.status('Rule', 'draft')?.['shadow']).toBeUndefined();
  });

  it('keeps the counts across a restart of the operator and starts again on a spec edit', async () => {
    const first = setup();
    await first.run.drain();
    first.ledger.set(NS, 'p', proposedTally(40, 4));
    await first.pass();
    // A new process: a new session, and a ledger that starts from nothing; the status recorded stays.
    const recorded = first.source.objects.get('Rule/acme/p');
    if (!recorded) throw new Error('no rule');
    const second = setup([recorded], 'op-a-2');
    second.ledger.set(NS, 'p', proposedTally(2, 1, Date.parse('2026-11-28T10:30:00Z')));
    await second.run.drain();
    expect(second.source.status('Rule', 'p')?.['shadow']).toMatchObject({ evaluated: 42, flips: 5 });
    // The spec changes: generation 2 counts from zero, though the ledger still holds generation 1's.
    const edited = sourceObject(
      'Rule',
      'p',
      { ...PROPOSED, actions: ['read', 'write'] },
      {
        generation: 2,
        status: second.source.status('Rule', 'p') ?? {},
      },
    );
    second.source.objects.set('Rule/acme/p', edited);
    await second.run.drain();
    expect(second.source.status('Rule', 'p')?.['shadow']).toMatchObject({
      evaluated: 0,
      observedGeneration: 2,
      summary: 'no live decisions yet',
    });
    second.ledger.set(NS, 'p', proposedTally(3, 0, Date.parse('2026-11-28T11:00:01Z')));
    await second.pass();
    expect(second.source.status('Rule', 'p')?.['shadow']).toMatchObject({ evaluated: 3, observedGeneration: 2 });
  });

  it('is written by the 10 s pass, not again by the echo of its own write while decisions keep coming', async () => {
    const { source, ledger, run, pass, clock } = setup();
    await run.drain();
    ledger.set(NS, 'p', proposedTally(100, 1));
    await pass();
    const writes = source.writes.length;
    expect(source.status('Rule', 'p')?.['shadow']).toMatchObject({ evaluated: 100 });
    // The watch event of that write reconciles the rule again: decisions went on meanwhile.
    for (let n = 101; n < 110; n++) {
      ledger.set(NS, 'p', proposedTally(n, 1));
      clock.ms += 100;
      await run.drain();
    }
    expect(source.writes.length).toBe(writes);
    expect(source.status('Rule', 'p')?.['shadow']).toMatchObject({ evaluated: 100 });
    // The next pass writes the counts of now; so does any reconcile once 10 s went by.
    await pass();
    expect(source.status('Rule', 'p')?.['shadow']).toMatchObject({ evaluated: 109 });
    ledger.set(NS, 'p', proposedTally(120, 1));
    clock.ms += 10_000;
    await run.drain();
    expect(source.status('Rule', 'p')?.['shadow']).toMatchObject({ evaluated: 120 });
  });

  it('writes nothing of shadow decisions when no view is given (offline commands)', async () => {
    const source = fakeSource([sourceObject('Rule', 'p', PROPOSED)]);
    const run = startController(source);
    await run.drain();
    expect(source.status('Rule', 'p')?.['shadow']).toBeUndefined();
  });
});
