// Leader and follower: a follower never issues tokens, never writes status, and serves a bundle only
// at the revision and digest the leader recorded; a leader never reuses a recorded revision number.
import { describe, expect, it } from 'vitest';
import { hashToken } from '../auth/index.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import { createStore, type Store } from '../store/index.ts';
import { fakeSource, NS, sourceObject, startController } from '../../test/support/controller.ts';
import type { Controller } from './controller.ts';
import type { Kind, ObjectKey, SourceObject, TokenSecret } from './types.ts';

function object(kind: Kind, name: string, spec: Record<string, unknown>, status?: Record<string, unknown>): SourceObject {
  return sourceObject(kind, name, spec, status ? { status } : {});
}

function rule(name: string, actions: string[]): SourceObject {
  return object('Rule', name, { state: 'Enforced', subjectType: 'user', actions, resourceType: 'document' });
}

interface Harness {
  readonly store: Store;
  readonly objects: Map<string, SourceObject>;
  readonly secrets: Map<string, TokenSecret>;
  readonly statusWrites: ObjectKey[];
  readonly tokenWrites: string[];
  run(leading: boolean): Promise<void>;
  /** A controller over the harness's objects, counting in `metrics`. */
  start(leading: boolean, metrics?: Metrics): Controller;
}

/** One replica: each run starts a new controller (a restart) over the same source and store. */
function harness(initial: SourceObject[], secrets: Map<string, TokenSecret> = new Map()): Harness {
  const source = fakeSource(initial, secrets);
  const store = createStore();
  return {
    store,
    objects: source.objects,
    secrets,
    get statusWrites() {
      return source.writes.map((w) => w.key);
    },
    tokenWrites: source.tokenWrites,
    async run(leading) {
      await startController(source, { store, leading }).drain();
    },
    start(leading, metrics) {
      return startController(source, { store, leading, ...(metrics ? { metrics: metrics.controller } : {}) }).controller;
    },
  };
}

const base = (): SourceObject[] => [
  object('Connector', 'gateways', {}),
  object('Bundle', 'docs', { connector: 'gateways' }),
  rule('team', ['read']),
];

describe('a follower', () => {
  it('issues no token, writes no status and serves nothing before the leader recorded a revision', async () => {
    const h = harness(base());
    await h.run(false);
    expect(h.tokenWrites).toEqual([]);
    expect(h.statusWrites).toEqual([]);
    expect(h.store.snapshot().tenants.get(NS)?.bundles.get('docs')).toBeUndefined();
    expect(
      h.store
        .snapshot()
        .tenants.get(NS)
        ?.index.rules.map((r) => r.model.name),
    ).toEqual(['team']);
  });

  it('serves exactly the bytes the leader recorded', async () => {
    const leader = harness(base());
    await leader.run(true);
    const recorded = leader.objects.get('Bundle/acme/docs')?.raw['status'] as { revision: number; digest: string; etag: string };
    expect(recorded.revision).toBe(1);
    const follower = harness([...leader.objects.values()], new Map(leader.secrets));
    await follower.run(false);
    const served = follower.store.snapshot().tenants.get(NS)?.bundles.get('docs');
    expect(served?.built.etag).toBe(recorded.etag);
    expect(
      Buffer.from(served?.built.bytes ?? []).equals(
        Buffer.from(leader.store.snapshot().tenants.get(NS)?.bundles.get('docs')?.built.bytes ?? []),
      ),
    ).toBe(true);
    expect(follower.store.snapshot().tokens.has(hashToken(leader.secrets.get('acme/gateways')?.token ?? ''))).toBe(true);
  });

  it('does not serve its own build when its rules differ from what the leader recorded', async () => {
    const leader = harness(base());
    await leader.run(true);
    // The follower already sees an edit the leader has not built yet: same revision number, other bytes.
    const objects = [...leader.objects.values()].map((o) =>
      o.kind === 'Rule'
        ? { ...rule('team', ['read', 'write']), raw: { ...rule('team', ['read', 'write']).raw, status: o.raw['status'] } }
        : o,
    );
    const follower = harness(objects, new Map(leader.secrets));
    await follower.run(false);
    expect(follower.store.snapshot().tenants.get(NS)?.bundles.get('docs')).toBeUndefined();
  });

  it('refuses the old token as soon as the spec asks for a rotation, before the new Secret arrives', async () => {
    const secrets = new Map([['acme/gateways', { token: 'agent_old', rotation: 0, issuedAt: '2026-01-01T00:00:00Z' }]]);
    const h = harness([object('Connector', 'gateways', { tokenRotation: 1 })], secrets);
    await h.run(false);
    expect(h.tokenWrites).toEqual([]);
    expect(h.store.snapshot().tokens.size).toBe(0);
  });
});

describe('a leader', () => {
  it('continues from the recorded revision when it is newer than what it serves', async () => {
    const first = harness(base());
    await first.run(true);
    const status = first.objects.get('Bundle/acme/docs')?.raw['status'] as Record<string, unknown>;
    // Another replica led meanwhile and recorded revision 5 for other content.
    const objects = [...first.objects.values()].map((o) =>
      o.kind === 'Bundle' ? { ...o, raw: { ...o.raw, status: { ...status, revision: 5, digest: 'sha256:other' } } } : o,
    );
    const h = harness(objects, new Map(first.secrets));
    await h.run(true);
    expect(h.store.snapshot().tenants.get(NS)?.bundles.get('docs')?.built.revision).toBe(6);
    expect(h.objects.get('Bundle/acme/docs')?.raw['status']).toMatchObject({ revision: 6 });
  });

  it('keeps the recorded revision when its bytes are the recorded ones', async () => {
    const first = harness(base());
    await first.run(true);
    const h = harness([...first.objects.values()], new Map(first.secrets));
    await h.run(true);
    expect(h.store.snapshot().tenants.get(NS)?.bundles.get('docs')?.built.revision).toBe(1);
    expect(h.statusWrites.filter((k) => k.kind === 'Bundle')).toEqual([]);
  });
});

/** The acl_bundle_rolled_out lines of a registry, e.g. `status="False"} 1`. */
async function rolledOutLines(metrics: Metrics): Promise<string[]> {
  const prefix = `acl_bundle_rolled_out{tenant="${NS}",bundle="docs",`;
  return (await metrics.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith(prefix))
    .map((l) => l.slice(prefix.length));
}

/** The Bundle as the leader's status write leaves it, with RolledOut at `status`. */
function withRolledOut(bundle: SourceObject, status: 'True' | 'False'): SourceObject {
  const recorded = bundle.raw['status'] as { conditions: { type: string }[] };
  const conditions = recorded.conditions.map((c) =>
    c.type === 'RolledOut' ? { ...c, status, reason: status === 'True' ? 'AllAgentsCurrent' : 'AgentsBehind' } : c,
  );
  return { ...bundle, raw: { ...bundle.raw, status: { ...recorded, conditions } } };
}

describe('the RolledOut metric', () => {
  it("is what the leader's status write records, on the leader", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const h = harness(base());
    const controller = h.start(true, metrics);
    for (const o of h.objects.values()) controller.enqueue({ kind: o.kind, namespace: NS, name: o.metadata.name });
    await controller.idle();
    // Served, and no OPA has reported yet.
    expect(await rolledOutLines(metrics)).toEqual(['status="True"} 0', 'status="False"} 0', 'status="Unknown"} 1']);
  });

  it('follows on a follower every RolledOut the leader records, and goes with the Bundle', async () => {
    const leader = harness(base());
    await leader.run(true);
    const recorded = leader.objects.get('Bundle/acme/docs') as SourceObject;
    const follower = harness([...leader.objects.values()], new Map(leader.secrets));
    const metrics = createMetrics({ defaultMetrics: false });
    const controller = follower.start(false, metrics);
    for (const o of follower.objects.values()) controller.enqueue({ kind: o.kind, namespace: NS, name: o.metadata.name });
    await controller.idle();
    expect(await rolledOutLines(metrics)).toEqual(['status="True"} 0', 'status="False"} 0', 'status="Unknown"} 1']);
    // The leader's writes reach the follower's watch one after another.
    for (let i = 0; i < 10; i++) {
      const status = i % 2 === 0 ? 'False' : 'True';
      follower.objects.set('Bundle/acme/docs', withRolledOut(recorded, status));
      controller.enqueue({ kind: 'Bundle', namespace: NS, name: 'docs' });
      await controller.idle();
      expect(await rolledOutLines(metrics)).toEqual([
        `status="True"} ${status === 'True' ? 1 : 0}`,
        `status="False"} ${status === 'False' ? 1 : 0}`,
        'status="Unknown"} 0',
      ]);
    }
    expect(follower.statusWrites).toEqual([]);
    follower.objects.delete('Bundle/acme/docs');
    controller.enqueue({ kind: 'Bundle', namespace: NS, name: 'docs' });
    await controller.idle();
    expect(await rolledOutLines(metrics)).toEqual([]);
  });
});
