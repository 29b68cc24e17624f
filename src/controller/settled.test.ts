// Readiness waits for what is served, not for status writes; status writes run a few at a time.
import { describe, expect, it } from 'vitest';
import { fakeSource, sourceObject as object, startController } from '../../test/support/controller.ts';
import type { ControllerMetrics } from './drain.ts';
import type { ClusterWriter, ObjectKey } from './types.ts';

const NOW = new Date('2026-11-28T05:00:00Z');

/** Metrics that record the kind of every reconcile. */
const metrics = (reconciled: string[]): ControllerMetrics => ({
  reconciled: (kind) => reconciled.push(kind),
  phases: () => undefined,
  queueDepth: () => undefined,
  statusWritten: () => undefined,
  rolledOut: () => undefined,
});

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

  it('holds every key until released, then reconciles each once though a new leader queued them all again', async () => {
    const objects = [
      object('Connector', 'gateways', {}),
      object('Bundle', 'docs', { connector: 'gateways' }),
      ...Array.from({ length: 50 }, (_, i) =>
        object('Rule', `rule-${i}`, { state: 'Enforced', subjectType: 'user', actions: [`a${i}`], resourceType: 'document' }),
      ),
    ];
    const source = fakeSource(objects);
    const reconciled: string[] = [];
    const run = startController(source, {
      held: true,
      leading: false,
      metrics: metrics(reconciled),
      now: () => NOW,
    });
    const enqueueAll = (keys: readonly ObjectKey[]): void => {
      for (const k of keys) run.controller.enqueue(k);
    };
    // The first list, in three batches as informers deliver them, then the Lease won: everything queued again.
    for (let i = 0; i < objects.length; i += 20) {
      enqueueAll(source.keys().slice(i, i + 20));
      await new Promise((r) => setImmediate(r));
    }
    await run.controller.idle();
    expect(reconciled).toEqual([]);
    run.leading = true;
    enqueueAll(source.keys());
    run.controller.release();
    await run.controller.settled();
    await run.controller.idle();
    expect(reconciled.filter((k) => k === 'Rule')).toHaveLength(50);
    // The same reconciles, statuses and bundle as a replica that led from the start and drained once.
    const once = fakeSource(objects);
    const alone: string[] = [];
    const leader = startController(once, { metrics: metrics(alone), now: () => NOW });
    await leader.drain();
    expect(reconciled).toEqual(alone);
    expect(source.writes).toHaveLength(52);
    expect(source.writes).toEqual(once.writes);
    expect(run.store.snapshot().tenants.get('acme')?.bundles.get('docs')?.built.etag).toBe(
      leader.store.snapshot().tenants.get('acme')?.bundles.get('docs')?.built.etag,
    );
  });
});
