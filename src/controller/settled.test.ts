// Readiness waits for what is served, not for status writes; status writes run a few at a time.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createStore } from '../store/index.ts';
import { createController } from './controller.ts';
import type { ClusterWriter, Kind, ObjectReader, SourceObject } from './types.ts';

const API = 'acl.policyagent.dev/v1alpha1';
const object = (kind: Kind, name: string, spec: Record<string, unknown>): SourceObject => {
  const metadata = { name, namespace: 'acme', uid: `uid-${name}`, generation: 1 };
  return { kind, metadata, raw: { apiVersion: API, kind, metadata, spec } };
};

describe('controller.settled', () => {
  it('resolves once the first pass is published, while status writes are still pending, which run 8 at a time', async () => {
    const objects = [
      object('Connector', 'gateways', {}),
      object('Bundle', 'docs', { connector: 'gateways' }),
      ...Array.from({ length: 20 }, (_, i) =>
        object('Rule', `rule-${i}`, { state: 'Enforced', subjectType: 'user', actions: [`a${i}`], resourceType: 'document' }),
      ),
    ];
    const reader: ObjectReader = {
      get: (kind, _ns, name) => objects.find((o) => o.kind === kind && o.metadata.name === name),
      list: (kind) => objects.filter((o) => o.kind === kind),
    };
    let inFlight = 0;
    let most = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const writer: ClusterWriter = {
      readTokenSecret: () => undefined,
      async writeTokenSecret() {
        /* not under test */
      },
      async deleteTokenSecret() {
        /* not under test */
      },
      async writeStatus() {
        inFlight++;
        most = Math.max(most, inFlight);
        await gate;
        inFlight--;
      },
    };
    const store = createStore();
    const controller = createController({ objects: reader, writer, store, log: pino({ level: 'silent' }) });
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
