// Regression: the last good version of a Rule whose spec became invalid is the newer of what the
// replica remembers and what status records. A replica that missed a generation (a relist delivers
// only the newest) used to put an older version back in force, and write it as leader.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createStore } from '../store/index.ts';
import { createController } from './controller.ts';
import type { ClusterWriter, ObjectKey, SourceObject } from './types.ts';

const NS = 'acme';
const API = 'acl.policyagent.dev/v1alpha1';

function ruleObj(generation: number, spec: Record<string, unknown>, status?: Record<string, unknown>): SourceObject {
  const metadata = { name: 'team', namespace: NS, uid: 'uid-team', generation, resourceVersion: String(generation) };
  return { kind: 'Rule', metadata, raw: { apiVersion: API, kind: 'Rule', metadata, spec, ...(status ? { status } : {}) } };
}

describe('last good rule version', () => {
  it('a replica that missed a generation keeps in force what the leader recorded', async () => {
    const gen1 = { state: 'Enforced', subjectType: 'user', actions: ['read'], resourceType: 'document' };
    const gen2 = { ...gen1, actions: ['read', 'write'] };
    const gen3 = { ...gen2, condition: 'principal.team ==' };
    const objects = new Map<string, SourceObject>([['Rule/team', ruleObj(1, gen1)]]);
    const writes: { key: ObjectKey; status: Record<string, unknown> }[] = [];
    const writer: ClusterWriter = {
      readTokenSecret: () => undefined,
      async writeTokenSecret() {
        /* none */
      },
      async deleteTokenSecret() {
        /* none */
      },
      async writeStatus(key, status) {
        writes.push({ key, status: status as Record<string, unknown> });
      },
    };
    let leading = false;
    const store = createStore();
    const controller = createController({
      objects: { get: (k, _n, name) => objects.get(`${k}/${name}`), list: (k) => [...objects.values()].filter((o) => o.kind === k) },
      writer,
      store,
      log: pino({ level: 'silent' }),
      leading: () => leading,
    });
    const key: ObjectKey = { kind: 'Rule', namespace: NS, name: 'team' };
    controller.enqueue(key);
    await controller.idle();
    // Meanwhile (unseen by this replica) the leader saw generation 2, then the invalid generation 3,
    // and recorded generation 2 as the version that stays in force.
    objects.set(
      'Rule/team',
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
    leading = true;
    controller.enqueue(key);
    await controller.idle();
    const written = writes.at(-1)?.status['translation'] as { generation?: number } | undefined;
    expect({ inForce, recordedGeneration: written?.generation }).toEqual({ inForce: ['read', 'write'], recordedGeneration: 2 });
  });
});
