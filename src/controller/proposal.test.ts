// A Rule's part in its tenant's proposal (docs/rules.md, "Shadow decisions"): Proposed rules and
// Enforced ones marked for removal reach TenantSnapshot.shadow, and leave it on any other state, an
// invalid spec, deletion or the annotation's removal; an annotation it cannot follow is said in status.
import { describe, expect, it } from 'vitest';
import { fakeSource, NS, RULE_SPEC, sourceObject, startController } from '../../test/support/controller.ts';
import type { ObjectKey } from './types.ts';

const MARK = 'acl.policyagent.dev/proposed-state';
const key: ObjectKey = { kind: 'Rule', namespace: NS, name: 'team' };

function setup(spec: Record<string, unknown>, annotations?: Record<string, string>) {
  const source = fakeSource([sourceObject('Rule', 'team', spec, annotations ? { annotations } : {})]);
  const run = startController(source);
  let generation = 1;
  const edit = async (next: Record<string, unknown> | undefined, marks?: Record<string, string>) => {
    if (next === undefined) source.objects.delete('Rule/acme/team');
    else
      source.objects.set(
        'Rule/acme/team',
        sourceObject('Rule', 'team', next, { generation: ++generation, ...(marks ? { annotations: marks } : {}) }),
      );
    run.controller.enqueue(key);
    await run.controller.idle();
  };
  const proposal = () => {
    const shadow = run.store.snapshot().tenants.get(NS)?.shadow;
    return shadow === undefined ? undefined : { proposed: shadow.proposed.rules.map((r) => r.model.name), removals: [...shadow.removals] };
  };
  const ready = () =>
    (source.writes.at(-1)?.status['conditions'] as { type: string; message: string }[] | undefined)?.find((c) => c.type === 'Ready')
      ?.message;
  return { edit, proposal, ready, run };
}

describe("a Rule's part in its tenant's proposal", () => {
  it('puts a valid Proposed rule in the proposal, never in force, and takes it out on another state, an invalid spec or deletion', async () => {
    const { edit, proposal, run } = setup({ ...RULE_SPEC, state: 'Proposed' });
    await edit({ ...RULE_SPEC, state: 'Proposed' });
    expect(proposal()).toEqual({ proposed: ['team'], removals: [] });
    expect(run.store.snapshot().tenants.get(NS)?.index.size).toBe(0);
    await edit({ ...RULE_SPEC, state: 'Draft' });
    expect(proposal()).toBeUndefined();
    await edit({ ...RULE_SPEC, state: 'Proposed', condition: 'principal.x ==' });
    expect(proposal()).toBeUndefined();
    await edit({ ...RULE_SPEC, state: 'Proposed' });
    expect(proposal()).toEqual({ proposed: ['team'], removals: [] });
    await edit(undefined);
    expect(proposal()).toBeUndefined();
  });

  it('marks an Enforced or Approved rule for removal while it carries the annotation, and unmarks it when it goes', async () => {
    const { edit, proposal, ready, run } = setup(RULE_SPEC, { [MARK]: 'Suspended' });
    await edit(RULE_SPEC, { [MARK]: 'Suspended' });
    expect(proposal()).toEqual({ proposed: [], removals: ['team'] });
    // Still in force: the mark only counts what its going would change.
    expect(run.store.snapshot().tenants.get(NS)?.index.size).toBe(1);
    expect(ready()).not.toContain('Warning');
    await edit({ ...RULE_SPEC, state: 'Approved' }, { [MARK]: 'Archived' });
    expect(proposal()).toEqual({ proposed: [], removals: ['team'] });
    await edit(RULE_SPEC);
    expect(proposal()).toBeUndefined();
    await edit(RULE_SPEC, { [MARK]: 'Draft' });
    await edit({ ...RULE_SPEC, state: 'Suspended' }, { [MARK]: 'Draft' });
    expect(proposal()).toBeUndefined();
    expect(ready()).toContain(`Warning: annotation ${MARK} is ignored: only an Enforced or Approved rule can be proposed to leave`);
  });

  it('says in the Ready condition that an annotation with another value is ignored', async () => {
    const { edit, proposal, ready } = setup(RULE_SPEC);
    await edit(RULE_SPEC, { [MARK]: 'Deleted' });
    expect(proposal()).toBeUndefined();
    expect(ready()).toBe(
      `Decided by the service and built into the bundles that select it. Warning: annotation ${MARK}: "Deleted" is ignored: it takes Suspended, Archived or Draft`,
    );
  });
});
