import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPem, KeyProblem, readSigningKey, signaturesFile, structuredHash, verifySignaturesFile } from './index.ts';

// One generated key for the whole file: RSA generation takes a while.
const pem = generateSigningKeyPem(2048);

describe('signing keys', () => {
  it('names a key by its public half: the same PEM read twice, or as PKCS#1, gives the same kid', () => {
    const a = readSigningKey(pem);
    const pkcs1 = a.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    expect(readSigningKey(pem).kid).toBe(a.kid);
    expect(readSigningKey(pkcs1).kid).toBe(a.kid);
    expect(a.kid).toMatch(/^acl-[0-9a-f]{16}$/);
    expect(a.bits).toBe(2048);
    expect(a.publicKeyPem).toContain('BEGIN PUBLIC KEY');
    expect(readSigningKey(generateSigningKeyPem(2048)).kid).not.toBe(a.kid);
  });

  it('refuses what cannot sign, saying why', () => {
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const huge = generateKeyPairSync('rsa', { modulusLength: 4104 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const cases: [string, RegExp][] = [
      [weak, /1024 bits; at least 2048/],
      // Each signature is made on the thread that answers decisions: 8192 bits take ~25 ms, 16384 ~190 ms per archive.
      [huge, /4104 bits; at most 4096/],
      [ec, /ec key; bundles are signed with RS256/],
      ['hello', /not a PEM private key/],
      [readSigningKey(pem).publicKeyPem, /public key or certificate/],
      ['-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', /not a readable private key/],
    ];
    for (const [text, message] of cases) {
      expect(() => readSigningKey(text)).toThrow(KeyProblem);
      expect(() => readSigningKey(text)).toThrow(message);
    }
  });
  it('refuses a damaged key whose signatures its own public key does not verify (OPA would refuse every bundle)', () => {
    // One character changed by hand in the PEM: most such keys no longer parse, some parse and sign wrongly.
    const lines = pem.split('\n');
    let damaged: string | undefined;
    for (let i = 1; damaged === undefined && i < lines.length - 2; i++) {
      for (const at of [5, 30, 50]) {
        const line = lines[i] as string;
        const copy = [...lines];
        copy[i] = `${line.slice(0, at)}${line[at] === 'A' ? 'B' : 'A'}${line.slice(at + 1)}`;
        const text = copy.join('\n');
        try {
          const k = createPrivateKey(text);
          const signature = sign('sha256', Buffer.from('x'), k);
          if (k.asymmetricKeyDetails?.modulusLength === 2048 && !verify('sha256', Buffer.from('x'), createPublicKey(k), signature)) {
            damaged = text;
            break;
          }
        } catch {
          // Does not parse: refused anyway.
        }
      }
    }
    expect(damaged).toBeDefined();
    expect(() => readSigningKey(damaged as string)).toThrow(KeyProblem);
    expect(() => readSigningKey(damaged as string)).toThrow(/damaged/);
  });
});

describe('.signatures.json', () => {
  const key = readSigningKey(pem);
  const manifest = '{"metadata":{"bundle":"b","tenant":"t"},"revision":"3","roots":["acl"]}\n';
  const files = [
    { name: '.manifest', hash: structuredHash(manifest) },
    { name: 'policy.rego', hash: createHash('sha256').update('package acl\n').digest('hex') },
  ];

  it('is deterministic (RS256) and verifies with the public key, naming the key', () => {
    const text = signaturesFile(files, key);
    expect(signaturesFile(files, key)).toBe(text);
    expect(verifySignaturesFile(text, key.publicKeyPem)).toEqual({ kid: key.kid, files });
    const other = readSigningKey(generateSigningKeyPem(2048));
    expect(verifySignaturesFile(text, other.publicKeyPem)).toBeUndefined();
  });

  it('hashes a structured file as OPA does: the JSON value with sorted keys, not the bytes', () => {
    // Values from `opa build --signing-key` (OPA 1.1) for a manifest written with other key order and spacing.
    const opaHash = 'fdded56fe97e1fe27f68c0034cfa598fdb5971fe6a0effe15c70b37991c7169a';
    expect(structuredHash('{"revision":"7","roots":["acl"],"rego_version":1,"metadata":{"tenant":"t\\u003c\\u0026\\u003e"}}')).toBe(
      opaHash,
    );
    expect(structuredHash('{ "metadata": {"tenant": "t<&>"}, "rego_version": 1, "revision": "7", "roots": ["acl"] }\n')).toBe(opaHash);
    expect(structuredHash('{}')).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });
});
