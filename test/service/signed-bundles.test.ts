// The bundle route with signed bundles: `?key=<kid>` picks the archive signed by that key (current
// when absent), each archive with its own ETag, 304 and long poll; a key that signs nothing is a 404
// naming the keys that do; a held poll pinned to a key that retires is answered at once.
import { afterEach, describe, expect, it } from 'vitest';
import { generateSigningKeyPem, readSigningKey, verifySignaturesFile } from '../../src/signing/index.ts';
import { NS, RULE_SPEC, sourceObject } from '../support/controller.ts';
import { startSignedService, type SignedService } from '../support/signed-service.ts';
import { tarFile } from '../support/tar.ts';

const A = readSigningKey(generateSigningKeyPem(2048));
const B = readSigningKey(generateSigningKeyPem(2048));
const objects = () => [
  sourceObject('Connector', 'gateways', {}),
  sourceObject('Bundle', 'docs', { connector: 'gateways' }),
  sourceObject('Rule', 'team', RULE_SPEC),
];

let service: SignedService | undefined;
afterEach(async () => {
  await service?.stop();
  service = undefined;
});

async function start(state: Parameters<typeof startSignedService>[1]): Promise<SignedService> {
  service = await startSignedService(objects(), state);
  await service.drain();
  return service;
}

function get(s: SignedService, query: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${s.url}/${NS}/connectors/policyagent/gateways/bundles/docs${query}`, {
    headers: { Authorization: `Bearer ${s.token(NS, 'gateways')}`, ...headers },
  });
}

/** The kid whose key verifies an archive's .signatures.json. */
async function signer(res: Response): Promise<string | undefined> {
  const text = tarFile(new Uint8Array(await res.arrayBuffer()), '.signatures.json');
  if (text === undefined) return undefined;
  return [A, B].find((k) => verifySignaturesFile(text, k.publicKeyPem))?.kid;
}

describe('signed bundles over HTTP', () => {
  it('serves the archive signed by the key the request names, the current one when it names none', async () => {
    const s = await start({ unsigned: false, ring: { current: B, previous: A }, problem: undefined });
    const plain = await get(s, '');
    const current = await get(s, `?key=${B.kid}`);
    const previous = await get(s, `?key=${A.kid}`);
    // Spelled another way (another parameter too): through the Express route, the same answer.
    const odd = await get(s, `?other=1&key=${A.kid}`);
    expect([plain.status, current.status, previous.status, odd.status]).toEqual([200, 200, 200, 200]);
    expect(plain.headers.get('etag')).toBe(current.headers.get('etag'));
    expect(previous.headers.get('etag')).not.toBe(current.headers.get('etag'));
    expect(odd.headers.get('etag')).toBe(previous.headers.get('etag'));
    expect([await signer(plain), await signer(current), await signer(previous), await signer(odd)]).toEqual([B.kid, B.kid, A.kid, A.kid]);
    const built = s.store.snapshot().tenants.get(NS)?.bundles.get('docs')?.built;
    expect(previous.headers.get('etag')).toBe(built?.previous?.etag);
    expect(current.headers.get('etag')).toBe(built?.etag);
  });

  it('answers 304 per archive: the previous key ETag for a request pinned to it, 200 for one that is not', async () => {
    const s = await start({ unsigned: false, ring: { current: B, previous: A }, problem: undefined });
    const etagA = (await get(s, `?key=${A.kid}`)).headers.get('etag') as string;
    expect((await get(s, `?key=${A.kid}`, { 'If-None-Match': etagA })).status).toBe(304);
    const unpinned = await get(s, '', { 'If-None-Match': etagA });
    expect(unpinned.status).toBe(200);
    expect(await signer(unpinned)).toBe(B.kid);
  });

  it('refuses a key that signs nothing with a 404 naming the keys that sign', async () => {
    const s = await start({ unsigned: false, ring: { current: B, previous: A }, problem: undefined });
    const res = await get(s, '?key=acl-0000000000000000');
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      `bundle docs is not signed by key "acl-0000000000000000"; the keys that sign it are ${B.kid} and ${A.kid} (the OPA configuration names a retired key: take the current one)`,
    );
    const activity = s.store.activity.list(`${NS}/docs`);
    expect(activity.at(-1)?.status).toBe(404);
  });

  it('answers a held poll pinned to the previous key as soon as that key retires', async () => {
    const s = await start({ unsigned: false, ring: { current: B, previous: A }, problem: undefined });
    const etagA = (await get(s, `?key=${A.kid}`)).headers.get('etag') as string;
    const held = get(s, `?key=${A.kid}`, { 'If-None-Match': etagA, Prefer: 'wait=25' });
    // Wait for it to be held (a condition, not a timer).
    while (s.heldPolls() === 0) await new Promise((r) => setImmediate(r));
    s.holder.set({ unsigned: false, ring: { current: B }, problem: undefined });
    await s.controller.idle();
    // Released by the publish that dropped the previous key's archive, not by its 25 s deadline.
    expect(s.heldPolls()).toBe(0);
    const res = await held;
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(`the keys that sign it are ${B.kid} (`);
  });

  it('says a bundle is unsigned when a request names a key under --unsigned-bundles', async () => {
    const s = await start({ unsigned: true });
    const res = await get(s, `?key=${A.kid}`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      `bundle docs is served unsigned (--unsigned-bundles), not signed by key "${A.kid}"`,
    );
    expect(await signer(await get(s, ''))).toBeUndefined();
  });
});
