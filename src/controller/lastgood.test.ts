// Regression: the last good version of a Rule whose spec became invalid is the newer of what the
// replica remembers and what status records. A replica that missed a generation (a relist delivers
// only the newest) used to put an older version back in force, and write it as leader.
import { describe, expect, it } from 'vitest';
import { fakeSource, NS, sourceObject, startController } from '../../test/support/controller.ts';
import type { ObjectKey, SourceObject } from './types.ts';

function ruleObj(generation: number, spec: Record<string, unknown>, status?: Record<string, unknown>): SourceObject {
  return sourceObject('Rule', 'team', spec, { generation, resourceVersion: String(generation), ...(status ? { status } : {}) });
}

describe('last good rule version', () => {
  it('a replica that missed a generation keeps in force what the leader recorded', async () => {
    const gen1 = { state: 'Enforced', subjectType: 'user', actions: ['read'], resourceType: 'document' };
    const gen2 = { ...gen1, actions: ['read', 'write'] };
    const gen3 = { ...gen2, condition: 'principal.team ==' };
    const source = fakeSource([ruleObj(1, gen1)]);
    const replica = startController(source, { leading: false });
    const { store, controller } = replica;
    const key: ObjectKey = { kind: 'Rule', namespace: NS, name: 'team' };
    controller.enqueue(key);
    await controller.idle();
    // Meanwhile (unseen by this replica) the leader saw generation 2, then the invalid generation 3,
    // and recorded generation 2 as the version that stays in force.
    source.objects.set(
      'Rule/acme/team',
      ruleObj(3, gen3, {
        phase: 'Invalid',
        observedGeneration: 3,
        translation: { status: 'Stale', generation: 2, rego: '(leader rego)', spec: gen2, message: 'generation 3 cannot be translated' },
      }),
    );
    controller.enqueue(key);
    await controller.idle();
    const inForce = store
      .snapshot()
      .tenants.get(NS)
      ?.index.rules.find((r) => r.model.name === 'team')?.model.actions;
    // This replica then becomes the leader.
    replica.leading = true;
    controller.enqueue(key);
    await controller.idle();
    const written = source.writes.at(-1)?.status['translation'] as { generation?: number } | undefined;
    expect({ inForce, recordedGeneration: written?.generation }).toEqual({ inForce: ['read', 'write'], recordedGeneration: 2 });
  });
});
