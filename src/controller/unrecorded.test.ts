// Regression: a replica that built a revision while leading, and stopped leading before recording
// it, must not keep serving it once the new leader gave that revision number to other bytes.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createStore } from '../store/index.ts';
import { createController } from './controller.ts';
import type { ClusterWriter, Kind, SourceObject, TokenSecret } from './types.ts';

const NS = 'acme';
const API = 'acl.policyagent.dev/v1alpha1';
function object(kind: Kind, name: string, spec: Record<string, unknown>, generation = 1): SourceObject {
  const metadata = { name, namespace: NS, uid: `uid-${name}`, generation };
  return { kind, metadata, raw: { apiVersion: API, kind, metadata, spec } };
}
const rule = (actions: string[], generation: number): SourceObject =>
  object('Rule', 'team', { state: 'Enforced', subjectType: 'user', actions, resourceType: 'document' }, generation);

function replica(initial: SourceObject[]) {
  const objects = new Map(initial.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
  const secrets = new Map<string, TokenSecret>();
  let failWrites = false;
  let leading = true;
  const writer: ClusterWriter = {
    readTokenSecret: (_n, c) => secrets.get(c),
    async writeTokenSecret(owner, s) {
      secrets.set(owner.metadata.name, s);
    },
    async deleteTokenSecret() {
      /* gc */
    },
    async writeStatus(key, status) {
      if (failWrites) throw new Error('HTTP 503 (or: the Lease was lost)');
      const o = objects.get(`${key.kind}/${key.name}`);
      if (o) objects.set(`${key.kind}/${key.name}`, { ...o, raw: { ...o.raw, status } });
    },
  };
  const store = createStore();
  const controller = createController({
    objects: { get: (k, _n, name) => objects.get(`${k}/${name}`), list: (k) => [...objects.values()].filter((o) => o.kind === k) },
    writer,
    store,
    log: pino({ level: 'silent' }),
    leading: () => leading,
    retryMs: 3_600_000,
  });
  return {
    objects,
    store,
    controller,
    set failWrites(v: boolean) {
      failWrites = v;
    },
    set leading(v: boolean) {
      leading = v;
    },
    async run() {
      for (const o of objects.values()) controller.enqueue({ kind: o.kind, namespace: NS, name: o.metadata.name });
      await controller.idle();
    },
    served() {
      const b = store.snapshot().tenants.get(NS)?.bundles.get('docs')?.built;
      return b && { revision: b.revision, digest: b.digest };
    },
  };
}

describe('unrecorded revisions', () => {
  it('a replica that stopped leading does not keep serving bytes the leader did not record for that revision', async () => {
    const base = [object('Connector', 'gateways', {}), object('Bundle', 'docs', { connector: 'gateways' })];
    const a = replica([...base, rule(['read'], 1)]);
    await a.run();
    const rev1 = a.objects.get('Bundle/docs')?.raw['status'];
    // A sees generation 2, builds and serves revision 2, but the status write fails and A loses the Lease.
    a.objects.set('Rule/team', rule(['read', 'write'], 2));
    a.failWrites = true;
    await a.run();
    a.leading = false;
    a.controller.stop();
    // B leads; it already sees generation 3 and records revision 2 for it.
    const b = replica([
      ...base.map((o) => (o.kind === 'Bundle' ? { ...o, raw: { ...o.raw, status: rev1 } } : o)),
      rule(['read', 'write', 'share'], 3),
    ]);
    await b.run();
    const recorded = b.objects.get('Bundle/docs')?.raw['status'] as { revision: number; digest: string };
    expect(recorded.revision).toBe(2);
    // A's Bundle informer delivers B's status (its Rule feed still lags at generation 2).
    const bundle = a.objects.get('Bundle/docs') as SourceObject;
    a.objects.set('Bundle/docs', { ...bundle, raw: { ...bundle.raw, status: recorded } });
    a.controller.enqueue({ kind: 'Bundle', namespace: NS, name: 'docs' });
    await a.controller.idle();
    const servedByA = a.served();
    console.log('A serves', servedByA, 'B recorded and serves', b.served());
    // Same revision number must mean same bytes on every replica.
    expect(servedByA?.revision !== recorded.revision || servedByA.digest === recorded.digest).toBe(true);
  });
});
