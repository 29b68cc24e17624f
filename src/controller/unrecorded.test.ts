// Regression: a replica that built a revision while leading, and stopped leading before recording
// it, must not keep serving it once the new leader gave that revision number to other bytes.
import { describe, expect, it } from 'vitest';
import { fakeSource, NS, sourceObject, startController } from '../../test/support/controller.ts';
import type { Kind, SourceObject } from './types.ts';

const object = (kind: Kind, name: string, spec: Record<string, unknown>, generation = 1): SourceObject =>
  sourceObject(kind, name, spec, { generation });
const rule = (actions: string[], generation: number): SourceObject =>
  object('Rule', 'team', { state: 'Enforced', subjectType: 'user', actions, resourceType: 'document' }, generation);

function replica(initial: SourceObject[]) {
  const source = fakeSource(initial);
  const run = startController(source, { retryMs: 3_600_000 });
  return {
    objects: source.objects,
    store: run.store,
    controller: run.controller,
    set failWrites(v: boolean) {
      source.failWrites = v;
    },
    set leading(v: boolean) {
      run.leading = v;
    },
    run: () => run.drain(),
    served() {
      const b = run.store.snapshot().tenants.get(NS)?.bundles.get('docs')?.built;
      return b && { revision: b.revision, digest: b.digest };
    },
  };
}

describe('unrecorded revisions', () => {
  it('a replica that stopped leading does not keep serving bytes the leader did not record for that revision', async () => {
    const base = [object('Connector', 'gateways', {}), object('Bundle', 'docs', { connector: 'gateways' })];
    const a = replica([...base, rule(['read'], 1)]);
    await a.run();
    const rev1 = a.objects.get('Bundle/acme/docs')?.raw['status'];
    // A sees generation 2, builds and serves revision 2, but the status write fails and A loses the Lease.
    a.objects.set('Rule/acme/team', rule(['read', 'write'], 2));
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
    const recorded = b.objects.get('Bundle/acme/docs')?.raw['status'] as { revision: number; digest: string };
    expect(recorded.revision).toBe(2);
    // A's Bundle informer delivers B's status (its Rule feed still lags at generation 2).
    const bundle = a.objects.get('Bundle/acme/docs') as SourceObject;
    a.objects.set('Bundle/acme/docs', { ...bundle, raw: { ...bundle.raw, status: recorded } });
    a.controller.enqueue({ kind: 'Bundle', namespace: NS, name: 'docs' });
    await a.controller.idle();
    const servedByA = a.served();
    console.log('A serves', servedByA, 'B recorded and serves', b.served());
    // Same revision number must mean same bytes on every replica.
    expect(servedByA?.revision !== recorded.revision || servedByA.digest === recorded.digest).toBe(true);
  });
});
