// Bundles signed by the keys a SigningHolder holds: a rotation's start moves every revision once and
// adds the previous key's archive, its end drops that archive in place; followers and restarts serve
// the leader's bytes; no key, a bad key and --unsigned-bundles each say so in the Signed condition.
import { describe, expect, it } from 'vitest';
import { buildBundle, type BuiltBundle } from '../bundle/index.ts';
import { generateSigningKeyPem, readSigningKey, type KeyRing } from '../signing/index.ts';
import { createStore, type Store } from '../store/index.ts';
import { fakeSource, NS, RULE_SPEC, sourceObject, startController, type FakeSource } from '../../test/support/controller.ts';
import { signedCondition } from './signed.ts';
import { createSigningHolder, type SigningHolder, type SigningState } from './signing.ts';
import type { SourceObject } from './types.ts';

const A = readSigningKey(generateSigningKeyPem(2048));
const B = readSigningKey(generateSigningKeyPem(2048));
const signed = (ring: KeyRing | undefined, problem?: string): SigningState => ({ unsigned: false, ring, problem });

const objects = (): SourceObject[] => [
  sourceObject('Connector', 'gateways', {}),
  sourceObject('Bundle', 'docs', { connector: 'gateways' }),
  sourceObject('Bundle', 'more', { connector: 'gateways' }),
  sourceObject('Connector', 'gateways', {}, { namespace: 'globex' }),
  sourceObject('Bundle', 'docs', { connector: 'gateways' }, { namespace: 'globex' }),
  sourceObject('Rule', 'team', RULE_SPEC),
  sourceObject('Rule', 'team', RULE_SPEC, { namespace: 'globex' }),
];

interface Replica {
  readonly source: FakeSource;
  readonly store: Store;
  readonly holder: SigningHolder;
  served(name?: string, tenant?: string): BuiltBundle | undefined;
  status(name?: string, tenant?: string): Record<string, unknown> | undefined;
  /** The Signed condition a Bundle's status records. */
  signedText(name?: string): string | undefined;
  /** Resolves once the controller has drained what the holder's change queued. */
  idle(): Promise<void>;
  drain(): Promise<void>;
  stop(): void;
}

function replica(source: FakeSource, state: SigningState, leading = true): Replica {
  const store = createStore();
  const holder = createSigningHolder(state);
  const run = startController(source, { store, leading, signing: holder });
  return {
    source,
    store,
    holder,
    served: (name = 'docs', tenant = NS) => store.snapshot().tenants.get(tenant)?.bundles.get(name)?.built,
    status: (name = 'docs', tenant = NS) => source.status('Bundle', name, tenant),
    signedText(name = 'docs') {
      const c =
        (source.status('Bundle', name)?.['conditions'] as { type: string; status: string; reason: string; message: string }[]) ?? [];
      const s = c.find((x) => x.type === 'Signed');
      return s && `${s.status}/${s.reason}: ${s.message}`;
    },
    idle: () => run.controller.idle(),
    drain: () => run.drain(),
    stop: () => run.controller.stop(),
  };
}

/** What a full build of this revision with this ring gives (the tenant's one rule, as the controller selects it). */
async function fullBuild(r: Replica, revision: number, ring: KeyRing): Promise<{ digest: string; previous: string | undefined }> {
  const entry = r.store.snapshot().tenants.get(NS)?.bundles.get('docs');
  const rules = entry?.source.rules ?? [];
  const built = await buildBundle(
    { tenant: NS, name: 'docs', connector: 'gateways', regoVersion: 0, rules, entityTypes: [], directory: entry?.source.directory },
    revision,
    { ring },
  );
  return { digest: built.digest, previous: built.previous?.digest };
}

describe('signed bundles in the controller', () => {
  it('moves every revision once when a rotation starts, keeps it when the previous key retires, and equals a full build each time', async () => {
    const r = replica(fakeSource(objects()), signed({ current: A }));
    await r.drain();
    expect(r.served()?.revision).toBe(1);
    expect(r.served()?.kid).toBe(A.kid);
    expect(r.status()?.['signingKey']).toBe(A.kid);
    expect(r.signedText()).toBe(`True/Signed: Revision 1 is signed by key ${A.kid}`);

    r.holder.set(signed({ current: B, previous: A }));
    await r.idle();
    for (const [name, tenant] of [
      ['docs', NS],
      ['more', NS],
      ['docs', 'globex'],
    ] as const) {
      expect(r.served(name, tenant)?.revision, `${tenant}/${name}`).toBe(2);
      expect(r.served(name, tenant)?.kid).toBe(B.kid);
      expect(r.served(name, tenant)?.previous?.kid).toBe(A.kid);
      expect(r.status(name, tenant)?.['signingKey']).toBe(B.kid);
    }
    expect(r.signedText()).toBe(
      `True/Signed: Revision 2 is signed by key ${B.kid}, and by the previous key ${A.kid} for the OPAs still pinned to it`,
    );
    const rotating = r.served() as BuiltBundle;
    expect({ digest: rotating.digest, previous: rotating.previous?.digest }).toEqual(await fullBuild(r, 2, { current: B, previous: A }));

    r.holder.set(signed({ current: B }));
    await r.idle();
    const retired = r.served() as BuiltBundle;
    expect(retired.revision).toBe(2);
    expect(retired.previous).toBeUndefined();
    expect(retired.digest).toBe(rotating.digest);
    expect({ digest: retired.digest, previous: undefined }).toEqual(await fullBuild(r, 2, { current: B }));
    expect(r.status()?.['digest']).toBe(rotating.digest);
    expect(r.signedText()).toBe(`True/Signed: Revision 2 is signed by key ${B.kid}`);
    r.stop();
  });

  it('serves the leader bytes on a follower and after a restart midway through a rotation, both archives alike', async () => {
    const leader = replica(fakeSource(objects()), signed({ current: A }));
    await leader.drain();
    leader.holder.set(signed({ current: B, previous: A }));
    await leader.idle();
    const led = leader.served() as BuiltBundle;
    leader.stop();
    const copy = (): SourceObject[] => [...leader.source.objects.values()];
    const follower = replica(fakeSource(copy(), new Map(leader.source.secrets)), signed({ current: B, previous: A }), false);
    await follower.drain();
    const restarted = replica(fakeSource(copy(), new Map(leader.source.secrets)), signed({ current: B, previous: A }));
    await restarted.drain();
    for (const other of [follower, restarted]) {
      const b = other.served() as BuiltBundle;
      expect(b.revision).toBe(2);
      expect(b.digest).toBe(led.digest);
      expect(b.previous?.digest).toBe(led.previous?.digest);
    }
    expect(restarted.source.writes.filter((w) => w.key.kind === 'Bundle' && w.status['revision'] !== 2)).toEqual([]);
    // The follower learns of the retirement from its own holder (the same Secret): the twin goes, the bytes stay.
    follower.holder.set(signed({ current: B }));
    await follower.idle();
    expect(follower.served()?.previous).toBeUndefined();
    expect(follower.served()?.digest).toBe(led.digest);
    follower.stop();
    restarted.stop();
  });

  it('serves nothing while no key was ever read, says so, and serves signed once a key comes', async () => {
    const r = replica(fakeSource(objects()), signed(undefined, 'Secret acl-signing-key has no tls.key'));
    await r.drain();
    expect(r.served()).toBeUndefined();
    expect(r.status()?.['phase']).toBe('Pending');
    expect(r.signedText()).toBe(
      'False/NoSigningKey: No signing key has been read (Secret acl-signing-key has no tls.key): nothing is served for this bundle until one is',
    );
    r.holder.set(signed({ current: A }));
    await r.idle();
    expect(r.served()?.kid).toBe(A.kid);
    expect(r.status()?.['phase']).toBe('Ready');
    r.stop();
  });

  it('keeps signing with the last good key while the source key is rejected, and says which', async () => {
    const r = replica(fakeSource(objects()), signed({ current: A }));
    await r.drain();
    const before = r.served();
    r.holder.set(signed({ current: A }, 'Secret acl-signing-key: tls.key is an RSA key of 1024 bits; at least 2048 are required'));
    await r.idle();
    expect(r.served()).toBe(before);
    expect(r.signedText()).toBe(
      `True/KeyRejected: Secret acl-signing-key: tls.key is an RSA key of 1024 bits; at least 2048 are required; the last good key ${A.kid} keeps signing. Revision 1 is signed by key ${A.kid}`,
    );
    r.stop();
  });

  it('says so when bundles are unsigned, and serves them without .signatures.json', async () => {
    const r = replica(fakeSource(objects()), { unsigned: true });
    await r.drain();
    expect(r.served()?.kid).toBeUndefined();
    expect(r.status()?.['signingKey']).toBeUndefined();
    expect(r.signedText()).toBe('False/Unsigned: Bundles are served unsigned (--unsigned-bundles): OPA verifies nothing it downloads');
    r.stop();
  });
});

describe('signedCondition', () => {
  it('names both keys before a revision is built', () => {
    expect(signedCondition(signed({ current: B, previous: A }), undefined).message).toBe(
      `Bundles are signed by key ${B.kid}, and by the previous key ${A.kid} for the OPAs still pinned to it`,
    );
  });
});
