// Readiness waits for what is served, not for status writes; status writes run a few at a time.
import { describe, expect, it } from 'vitest';
import { fakeSource, sourceObject as object, startController } from '../../test/support/controller.ts';
import type { ClusterWriter } from './types.ts';

describe('controller.settled', () => {
  it('resolves once the first pass is published, while status writes are still pending, which run 8 at a time', async () => {
    const objects = [
      object('Connector', 'gateways', {}),
      object('Bundle', 'docs', { connector: 'gateways' }),
      ...Array.from({ length: 20 }, (_, i) =>
        object('Rule', `rule-${i}`, { state: 'Enforced', subjectType: 'user', actions: [`a${i}`], resourceType: 'document' }),
      ),
    ];
    const source = fakeSource(objects);
    let inFlight = 0;
    let most = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const writer: ClusterWriter = {
      ...source.writer,
      async writeStatus() {
        inFlight++;
        most = Math.max(most, inFlight);
        await gate;
        inFlight--;
      },
    };
    const { store, controller } = startController(source, { writer });
    for (const o of objects) controller.enqueue({ kind: o.kind, namespace: 'acme', name: o.metadata.name });
    await controller.settled();
    expect(store.snapshot().tenants.get('acme')?.bundles.get('docs')?.ruleCount).toBe(20);
    expect(inFlight).toBe(8);
    release();
    await controller.idle();
    expect(most).toBe(8);
    expect(inFlight).toBe(0);
  });
});
