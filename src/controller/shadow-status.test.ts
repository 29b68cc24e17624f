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
  const shadow = createShadowView({ ledger, now: () => NOW.getTime() });
  const run = startController(source, { shadow, now: () => NOW });
  return { source, ledger, shadow, run };
}

describe('status.shadow of a Rule', () => {
  it("shows a Proposed rule's counts, and a summary saying what it would allow", async () => {
    const { source, ledger, run } = setup();
    await run.drain();
    expect(source.status('Rule', 'p')?.['shadow']).toMatchObject({ role: 'Proposed', summary: 'no live decisions yet', evaluated: 0 });
    ledger.set(NS, 'p', proposedTally(3400, 12));
    await run.drain();
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
    await first.run.drain();
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
    await second.run.drain();
    expect(second.source.status('Rule', 'p')?.['shadow']).toMatchObject({ evaluated: 3, observedGeneration: 2 });
  });

  it('writes nothing of shadow decisions when no view is given (offline commands)', async () => {
    const source = fakeSource([sourceObject('Rule', 'p', PROPOSED)]);
    const run = startController(source);
    await run.drain();
    expect(source.status('Rule', 'p')?.['shadow']).toBeUndefined();
  });
});
