// Signed archives: `.manifest`, `policy.rego`, `.signatures.json`, the same bytes in every process,
// a rotation's twin sharing the policy.rego pieces, and every incremental path equal to a full build.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPem, readSigningKey, structuredHash, verifySignaturesFile } from '../signing/index.ts';
import { ruleModelFor } from '../../test/support/rules.ts';
import { tarFile, tarNames } from '../../test/support/tar.ts';
import { buildBundle, selectRules, type BuiltBundle, type BundleInput } from './index.ts';
import { packBundleFiles } from './bundle.ts';
import { createPieceCache } from './gzip.ts';
import { bundleSignatures } from './sign.ts';

// Two keys for the whole file: RSA generation takes a while.
const pemA = generateSigningKeyPem(2048);
const pemB = generateSigningKeyPem(2048);
const A = readSigningKey(pemA);
const B = readSigningKey(pemB);
const dir = mkdtempSync(join(tmpdir(), 'acl-signed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rules = [
  ruleModelFor('groups-datasets', { subjectType: 'group', resourceType: 'dataset' }),
  ruleModelFor('records-read', { resourceType: 'record' }),
  ruleModelFor('team-documents', { condition: 'principal.team == resource.team' }),
];
const input: BundleInput = {
  tenant: 'acme',
  name: 'gateway-policies',
  connector: 'gateways',
  regoVersion: 0,
  rules: selectRules('acme', rules, {}),
};

/** What identifies a build: its revision, input digest and each archive's key and bytes. */
function identity(b: BuiltBundle): unknown {
  const archive = (a: { kid: string | undefined; digest: string; etag: string; bytes: Uint8Array }) => ({
    kid: a.kid,
    digest: a.digest,
    etag: a.etag,
    sha: createHash('sha256').update(a.bytes).digest('hex'),
  });
  return { revision: b.revision, inputDigest: b.inputDigest, current: archive(b), previous: b.previous ? archive(b.previous) : undefined };
}

describe('a signed bundle', () => {
  it('holds .manifest, policy.rego and .signatures.json in that order, signed by the current key over both files', async () => {
    const b = await buildBundle(input, 3, { ring: { current: A } });
    expect(tarNames(b.bytes)).toEqual(['.manifest', 'policy.rego', '.signatures.json']);
    expect(b.kid).toBe(A.kid);
    expect(b.previous).toBeUndefined();
    const signatures = tarFile(b.bytes, '.signatures.json') as string;
    expect(verifySignaturesFile(signatures, A.publicKeyPem)).toEqual({
      kid: A.kid,
      files: [
        { name: '.manifest', hash: structuredHash(tarFile(b.bytes, '.manifest') as string) },
        {
          name: 'policy.rego',
          hash: createHash('sha256')
            .update(tarFile(b.bytes, 'policy.rego') as string)
            .digest('hex'),
        },
      ],
    });
    expect(verifySignaturesFile(signatures, B.publicKeyPem)).toBeUndefined();
  });

  it('stays .manifest and policy.rego alone when unsigned, with the same bytes as before signing existed', async () => {
    const b = await buildBundle(input, 3);
    expect(tarNames(b.bytes)).toEqual(['.manifest', 'policy.rego']);
    expect(b.kid).toBeUndefined();
    // The digest print-bundle-digest gave before this change: an upgrade with --unsigned-bundles moves no revision.
    expect(b.digest).toBe(
      execFileSync(process.execPath, [join(import.meta.dirname, '..', '..', 'test', 'support', 'print-bundle-digest.ts')], {
        encoding: 'utf8',
      }).trim(),
    );
  });

  it('gives the same bytes, digests and ETags in two builds and in another process, for both archives of a rotation', async () => {
    writeFileSync(join(dir, 'a.pem'), pemA, { mode: 0o600 });
    writeFileSync(join(dir, 'b.pem'), pemB, { mode: 0o600 });
    const one = await buildBundle(input, 3, { ring: { current: B, previous: A } });
    const two = await buildBundle(input, 3, { ring: { current: B, previous: A } });
    expect(identity(two)).toEqual(identity(one));
    const script = join(import.meta.dirname, '..', '..', 'test', 'support', 'print-bundle-digest.ts');
    const there = execFileSync(process.execPath, [script, join(dir, 'b.pem'), join(dir, 'a.pem')], { encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(there).toEqual([one.digest, one.previous?.digest]);
    expect(one.previous?.kid).toBe(A.kid);
    expect(one.digest).not.toBe(one.previous?.digest);
    expect(tarFile(one.previous?.bytes as Uint8Array, 'policy.rego')).toBe(tarFile(one.bytes, 'policy.rego'));
    expect(tarFile(one.previous?.bytes as Uint8Array, '.manifest')).toBe(tarFile(one.bytes, '.manifest'));
  });

  it('moves the input digest with the current key only: a rotation starts a revision, a retirement does not', async () => {
    const unsigned = (await buildBundle(input, 1)).inputDigest;
    const byA = (await buildBundle(input, 1, { ring: { current: A } })).inputDigest;
    const byBwithA = (await buildBundle(input, 1, { ring: { current: B, previous: A } })).inputDigest;
    const byB = (await buildBundle(input, 1, { ring: { current: B } })).inputDigest;
    expect(new Set([unsigned, byA, byB]).size).toBe(3);
    expect(byBwithA).toBe(byB);
  });

  it('equals a full build on every incremental path: the twin added, dropped, or kept', async () => {
    const full = (ring: { current: typeof A; previous?: typeof A }) => buildBundle(input, 4, { ring });
    const alone = await full({ current: B });
    const both = await full({ current: B, previous: A });
    const added = await buildBundle(input, 4, { ring: { current: B, previous: A }, reuse: alone });
    const dropped = await buildBundle(input, 4, { ring: { current: B }, reuse: both });
    const kept = await buildBundle(input, 4, { ring: { current: B, previous: A }, reuse: both });
    expect(identity(added)).toEqual(identity(both));
    expect(identity(dropped)).toEqual(identity(alone));
    expect(identity(kept)).toEqual(identity(both));
    // Taken, not packed again; and the rego of a re-signed build is still readable.
    expect(kept.bytes).toBe(both.bytes);
    expect(dropped.bytes).toBe(both.bytes);
    expect(added.rego).toBe(alone.rego);
    // A reuse of another revision is not taken.
    const otherRevision = await buildBundle(input, 5, { ring: { current: B }, reuse: alone });
    expect(identity(otherRevision)).toEqual(identity(await buildBundle(input, 5, { ring: { current: B } })));
  });

  it('shares every compressed piece of policy.rego between the archives signed by two keys: only the signatures are compressed again', async () => {
    const many = Array.from({ length: 3000 }, (_, i) => ruleModelFor(`rule-${i}`, { resourceType: `type${i % 40}` }));
    const big = await buildBundle({ ...input, rules: selectRules('acme', many, {}) }, 1);
    const cache = createPieceCache();
    const signatures = (key: typeof A) => bundleSignatures(big.manifest, big.regoHex, key);
    await packBundleFiles(big.manifest, big.rego, signatures(A), cache);
    const pieces = cache.pieces.size;
    expect(pieces).toBeGreaterThanOrEqual(3);
    const known = new Set(cache.pieces.keys());
    await packBundleFiles(big.manifest, big.rego, signatures(B), cache);
    const added = [...cache.pieces].filter(([k]) => !known.has(k)).map(([, p]) => gunzipSync(p.bytes).length);
    expect(added).toHaveLength(1);
    // The signatures' own member (their tar header, a JWT of about 1 KB, the tar's end), not a tail of policy.rego.
    expect(added[0]).toBeLessThan(4096);
    // Cut there or not, it is one gzip stream with the same files.
    expect(tarFile(await packBundleFiles(big.manifest, big.rego, signatures(B)), 'policy.rego')).toBe(big.rego);
  });
});
