import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createSigningHolder } from '../controller/index.ts';
import { generateSigningKeyPem, readSigningKey } from '../signing/index.ts';
import { createSigningKeySecret } from './signing-key.ts';
import {
  ANNOTATION_KEY_ID,
  ANNOTATION_PREVIOUS_KEY_ID,
  ANNOTATION_ROTATE,
  ANNOTATION_ROTATED,
  newKeySecret,
  plannedWrite,
  readKeySecret,
  stateAfter,
} from './key-secret.ts';

const REF = 'acl-system/acl-signing-key';
// 2048 bits: the smallest accepted, and quick to generate.
const A = generateSigningKeyPem(2048);
const B = generateSigningKeyPem(2048);
const C = generateSigningKeyPem(2048);
const kid = (pem: string): string => readSigningKey(pem).kid;
const b64 = (t: string): string => Buffer.from(t).toString('base64');
const pemOf = (s: V1Secret, field: string): string | undefined => {
  const v = s.data?.[field];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
};

function secret(data: Record<string, string>, annotations: Record<string, string> = {}, type = 'Opaque'): V1Secret {
  return {
    metadata: { name: 'acl-signing-key', namespace: 'acl-system', annotations, resourceVersion: '1' },
    type,
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}

describe('reading the signing key Secret', () => {
  it('reads tls.key as the current key and previous.key as the previous one', () => {
    const r = readKeySecret(secret({ 'tls.key': B, 'previous.key': A }), REF);
    expect(r.problem).toBeUndefined();
    if (r.problem === undefined) expect([r.ring.current.kid, r.ring.previous?.kid]).toEqual([kid(B), kid(A)]);
  });

  it('accepts a kubernetes.io/tls Secret', () => {
    expect(readKeySecret(secret({ 'tls.key': A, 'tls.crt': 'x' }, {}, 'kubernetes.io/tls'), REF).problem).toBeUndefined();
  });

  it.each([
    ['a missing Secret', undefined, 'Secret acl-system/acl-signing-key does not exist (the leader creates it with a new key)'],
    [
      'a wrong type',
      secret({ 'tls.key': A }, {}, 'kubernetes.io/basic-auth'),
      'Secret acl-system/acl-signing-key is of type kubernetes.io/basic-auth; a signing key Secret is Opaque or kubernetes.io/tls',
    ],
    [
      'no tls.key',
      secret({ other: A }),
      'Secret acl-system/acl-signing-key has no tls.key (the current signing key, an RSA private key in PEM)',
    ],
    [
      'malformed PEM',
      secret({ 'tls.key': 'hello' }),
      'Secret acl-system/acl-signing-key field tls.key is not a PEM private key (expected -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)',
    ],
    [
      'a weak key',
      secret({ 'tls.key': generateSigningKeyPem(1024) }),
      'Secret acl-system/acl-signing-key field tls.key is an RSA key of 1024 bits; at least 2048 are required',
    ],
    [
      'a malformed previous key',
      secret({ 'tls.key': A, 'previous.key': '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' }),
      'Secret acl-system/acl-signing-key field previous.key is not a readable private key',
    ],
  ])('names the Secret and the field for %s, never the key', (_what, s, problem) => {
    const r = readKeySecret(s, REF);
    expect(r.problem?.startsWith(problem)).toBe(true);
    expect(r.problem).not.toContain('MII');
  });

  it('keeps the last good ring when the Secret breaks, and says why', () => {
    const good = stateAfter({ unsigned: false, ring: undefined, problem: undefined }, readKeySecret(secret({ 'tls.key': A }), REF));
    const broken = stateAfter(good, readKeySecret(secret({ 'tls.key': 'junk' }), REF));
    expect(broken.ring?.current.kid).toBe(kid(A));
    expect(broken.problem).toContain('field tls.key');
  });
  it('signs with a good tls.key alone when a replica starts beside a broken previous.key, as standalone does', () => {
    // previous.key broken by hand: a replica (re)started now has no last good ring; it must not serve nothing.
    const fresh = { unsigned: false, ring: undefined, problem: undefined } as const;
    const started = stateAfter(fresh, readKeySecret(secret({ 'tls.key': B, 'previous.key': 'junk' }), REF));
    expect(started.ring?.current.kid).toBe(kid(B));
    expect(started.ring?.previous).toBeUndefined();
    expect(started.problem).toContain('field previous.key');
    // A replica that signed keeps its whole last good ring, as before.
    const good = stateAfter(fresh, readKeySecret(secret({ 'tls.key': B, 'previous.key': A }), REF));
    const kept = stateAfter(good, readKeySecret(secret({ 'tls.key': B, 'previous.key': 'junk' }), REF));
    expect([kept.ring?.current.kid, kept.ring?.previous?.kid]).toEqual([kid(B), kid(A)]);
  });
});

describe("the leader's write", () => {
  const never = (): boolean => false;
  const make = (pem: string) => async () => pem;
  const good = (s: V1Secret) => {
    const r = readKeySecret(s, REF);
    if (r.problem !== undefined) throw new Error(r.problem);
    return r;
  };

  it('rotates on a new annotation value in one update: tls.key new, previous.key the old, the value recorded', async () => {
    const s = secret({ 'tls.key': A }, { [ANNOTATION_ROTATE]: 'now', [ANNOTATION_KEY_ID]: kid(A) });
    const w = await plannedWrite(s, good(s), never, make(B));
    expect(w?.action).toBe('rotated');
    if (!w) return;
    expect([pemOf(w.body, 'tls.key'), pemOf(w.body, 'previous.key')]).toEqual([B, A]);
    expect(w.body.metadata?.annotations).toEqual({
      [ANNOTATION_ROTATE]: 'now',
      [ANNOTATION_ROTATED]: 'now',
      [ANNOTATION_KEY_ID]: kid(B),
      [ANNOTATION_PREVIOUS_KEY_ID]: kid(A),
    });
    // Read again (a restart): the handled value starts nothing.
    expect(await plannedWrite(w.body, good(w.body), never, make(C))).toBeUndefined();
  });

  it('waits with a second rotation until the previous key is retired', async () => {
    const s = secret(
      { 'tls.key': B, 'previous.key': A },
      { [ANNOTATION_ROTATE]: 'two', [ANNOTATION_ROTATED]: 'one', [ANNOTATION_KEY_ID]: kid(B), [ANNOTATION_PREVIOUS_KEY_ID]: kid(A) },
    );
    expect(await plannedWrite(s, good(s), never, make(C))).toBeUndefined();
    const retired = await plannedWrite(s, good(s), (current) => current === kid(B), make(C));
    expect(retired?.action).toBe('retired');
    if (!retired) return;
    expect(Object.keys(retired.body.data ?? {})).toEqual(['tls.key']);
    expect(retired.body.metadata?.annotations?.[ANNOTATION_PREVIOUS_KEY_ID]).toBeUndefined();
    const next = await plannedWrite(retired.body, good(retired.body), never, make(C));
    expect(next?.action).toBe('rotated');
    if (next) expect([pemOf(next.body, 'tls.key'), pemOf(next.body, 'previous.key')]).toEqual([C, B]);
  });

  it('names the kids in annotations on a Secret someone else made', async () => {
    const s = secret({ 'tls.key': A });
    const w = await plannedWrite(s, good(s), never, make(B));
    expect(w?.action).toBe('annotated');
    expect(w?.body.data).toEqual(s.data);
    expect(w?.body.metadata?.annotations).toEqual({ [ANNOTATION_KEY_ID]: kid(A) });
  });
});

/** An API server holding one Secret, with resourceVersions and 409s as the real one answers. */
function fakeCore() {
  let stored: V1Secret | undefined;
  let version = 0;
  const writes: string[] = [];
  const conflict = (): Error => Object.assign(new Error('Conflict'), { code: 409 });
  const core = {
    async readNamespacedSecret() {
      if (!stored) throw Object.assign(new Error('Not Found'), { code: 404 });
      return structuredClone(stored);
    },
    async createNamespacedSecret({ body }: { body: V1Secret }) {
      if (stored) throw conflict();
      writes.push('create');
      stored = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++version) } };
      return structuredClone(stored);
    },
    async replaceNamespacedSecret({ body }: { body: V1Secret }) {
      if (!stored || body.metadata?.resourceVersion !== stored.metadata?.resourceVersion) throw conflict();
      writes.push('replace');
      stored = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++version) } };
      return structuredClone(stored);
    },
  };
  return {
    core: core as unknown as CoreV1Api,
    writes,
    get: () => stored,
    set: (s: V1Secret) => {
      stored = { ...s, metadata: { ...s.metadata, resourceVersion: String(++version) } };
    },
    delete: () => {
      stored = undefined;
    },
  };
}

function replica(api: ReturnType<typeof fakeCore>, leading: () => boolean, retirementDue = (): boolean => false, keys = [A, B, C]) {
  const holder = createSigningHolder({ unsigned: false, ring: undefined, problem: undefined });
  let n = 0;
  const secret = createSigningKeySecret({
    core: api.core,
    namespace: 'acl-system',
    name: 'acl-signing-key',
    holder,
    log: pino({ level: 'silent' }),
    leading,
    retirementDue,
    generate: async () => keys[n++ % keys.length] as string,
  });
  const current = (): string | undefined => {
    const s = holder.get();
    return s.unsigned ? undefined : s.ring?.current.kid;
  };
  return { holder, secret, current };
}

describe('the signing key Secret on an API server', () => {
  it('is created once when two leaders race for it, and both sign with the same key', async () => {
    const api = fakeCore();
    const one = replica(api, () => true, undefined, [A]);
    const two = replica(api, () => true, undefined, [B]);
    await Promise.all([one.secret.check(), two.secret.check()]);
    expect(api.writes.filter((w) => w === 'create')).toEqual(['create']);
    expect(one.current()).toBe(two.current());
  });

  it('lets a follower read the key but never write', async () => {
    const api = fakeCore();
    const follower = replica(api, () => false);
    await follower.secret.check();
    expect(api.get()).toBeUndefined();
    const s = follower.holder.get();
    expect(!s.unsigned && s.problem).toContain('does not exist');
    api.set(newKeySecret('acl-system', 'acl-signing-key', A));
    await follower.secret.check();
    expect(follower.current()).toBe(kid(A));
    expect(api.writes).toEqual([]);
  });

  it('rotates exactly once for a flood of checks, and once more for each new value', async () => {
    const api = fakeCore();
    api.set(newKeySecret('acl-system', 'acl-signing-key', A));
    const leader = replica(api, () => true, undefined, [B, C]);
    await leader.secret.check();
    const stored = api.get() as V1Secret;
    api.set({ ...stored, metadata: { ...stored.metadata, annotations: { ...stored.metadata?.annotations, [ANNOTATION_ROTATE]: '1' } } });
    await Promise.all(Array.from({ length: 20 }, () => leader.secret.check()));
    const s = leader.holder.get();
    expect(s.unsigned ? [] : [s.ring?.current.kid, s.ring?.previous?.kid]).toEqual([kid(B), kid(A)]);
    expect(api.writes.filter((w) => w === 'replace')).toHaveLength(1);
  });

  it('re-creates a Secret deleted by hand with the keys that sign, not a new key', async () => {
    const api = fakeCore();
    api.set(secret({ 'tls.key': B, 'previous.key': A }));
    const leader = replica(api, () => true, undefined, [C]);
    await leader.secret.check();
    api.delete();
    await leader.secret.check();
    const back = api.get() as V1Secret;
    expect([pemOf(back, 'tls.key'), pemOf(back, 'previous.key')].map((p) => (p ? kid(p) : p))).toEqual([kid(B), kid(A)]);
    expect(back.metadata?.annotations).toEqual({ [ANNOTATION_KEY_ID]: kid(B), [ANNOTATION_PREVIOUS_KEY_ID]: kid(A) });
    const s = leader.holder.get();
    expect(s.unsigned ? undefined : [s.ring?.current.kid, s.problem]).toEqual([kid(B), undefined]);
  });

  it('keeps signing with the last good key when the Secret is broken by hand, and takes the repaired one', async () => {
    const api = fakeCore();
    api.set(newKeySecret('acl-system', 'acl-signing-key', A));
    const leader = replica(api, () => true);
    await leader.secret.check();
    for (const broken of [
      secret({ 'tls.key': 'junk' }),
      secret({ 'tls.key': generateSigningKeyPem(1024) }),
      secret({ 'tls.key': A }, {}, 'bootstrap.kubernetes.io/token'),
    ]) {
      api.set(broken);
      await leader.secret.check();
      const s = leader.holder.get();
      expect(s.unsigned ? undefined : [s.ring?.current.kid, typeof s.problem]).toEqual([kid(A), 'string']);
    }
    api.set(secret({ 'tls.key': C }));
    await leader.secret.check();
    const s = leader.holder.get();
    expect(s.unsigned ? undefined : [s.ring?.current.kid, s.problem]).toEqual([kid(C), undefined]);
  });
});
