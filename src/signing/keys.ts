// Bundle signing keys: RSA private keys in PEM, checked once where they enter (a Secret, a file),
// named by a key id derived from the public key alone, so every replica and every restart names the
// same key the same way. RSA because RS256 (PKCS#1 v1.5) signatures are deterministic: the same
// archive signed twice gives the same bytes, hence the same ETag on every replica (ES256 and PS256
// draw fresh randomness per signature).
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';

/** The smallest RSA modulus accepted (NIST SP 800-57: 2048 bits until 2030). */
export const MIN_RSA_BITS = 2048;
/**
 * The largest RSA modulus accepted: each signature is made on the thread that answers decisions, at
 * every build of every archive (4096 bits about 3 ms; 8192 about 25 ms; 16384 about 190 ms).
 */
export const MAX_RSA_BITS = 4096;
/** The size of the keys acl-operator generates. */
export const GENERATED_RSA_BITS = 3072;

/** A key that signs bundles. The private key never leaves this object as text. */
export interface SigningKey {
  /** `acl-` and 16 hex digits of the SHA-256 of the public key (SubjectPublicKeyInfo, DER). */
  readonly kid: string;
  readonly privateKey: KeyObject;
  /** The public key, SPKI PEM: what OPA's `keys.<kid>.key` holds. */
  readonly publicKeyPem: string;
  readonly bits: number;
}

/** A key that cannot sign, and why, worded for a status condition and a log line (never the key itself). */
export class KeyProblem extends Error {
  override readonly name = 'KeyProblem';
}

/** The key id of a public key: the same on every replica and after every restart. */
function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return `acl-${createHash('sha256').update(der).digest('hex').slice(0, 16)}`;
}

/**
 * Reads an RSA private key (PKCS#1 or PKCS#8 PEM). Throws KeyProblem naming what is wrong: not
 * PEM, encrypted, a public key or certificate, not RSA, shorter than MIN_RSA_BITS or longer than
 * MAX_RSA_BITS, or damaged (its signatures do not verify with its public key).
 */
export function readSigningKey(pem: string): SigningKey {
  const known = readKeys.get(pem);
  if (known) return known;
  const key = parseSigningKey(pem);
  // A Secret is read every 5 s: its keys, once checked, are not parsed and signed again.
  if (readKeys.size >= 8) readKeys.clear();
  readKeys.set(pem, key);
  return key;
}

/** The keys read lately, by their PEM text (a handful: the current and previous key of the last reads). */
const readKeys = new Map<string, SigningKey>();

function parseSigningKey(pem: string): SigningKey {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    if (/-----BEGIN (PUBLIC KEY|RSA PUBLIC KEY|CERTIFICATE)-----/.test(pem))
      throw new KeyProblem('holds a public key or certificate, not the private key that signs');
    throw new KeyProblem('is not a PEM private key (expected -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)');
  }
  if (/ENCRYPTED/.test(pem)) throw new KeyProblem('is an encrypted private key; acl-operator needs it unencrypted');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch (err) {
    throw new KeyProblem(`is not a readable private key (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
  }
  if (privateKey.asymmetricKeyType !== 'rsa') {
    throw new KeyProblem(`is an ${privateKey.asymmetricKeyType ?? 'unknown'} key; bundles are signed with RS256, which needs an RSA key`);
  }
  const bits = privateKey.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) throw new KeyProblem(`is an RSA key of ${bits} bits; at least ${MIN_RSA_BITS} are required`);
  if (bits > MAX_RSA_BITS) {
    throw new KeyProblem(
      `is an RSA key of ${bits} bits; at most ${MAX_RSA_BITS} are accepted (every signature is made where decisions are answered, and grows with the cube of the size)`,
    );
  }
  const publicKey = createPublicKey(privateKey);
  // A PEM changed by hand can still parse, with a damaged integer: its signatures then fail against its
  // own public key, which OPA holds, and every bundle would be refused. One signature tells.
  const probe = Buffer.from('acl-operator signing key check');
  if (!verify('sha256', probe, publicKey, sign('sha256', probe, privateKey))) {
    throw new KeyProblem('is damaged: its signatures do not verify with its own public key (restore the key, or make a new one)');
  }
  return {
    kid: keyIdOf(publicKey),
    privateKey,
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    bits,
  };
}

/** A new RSA key (GENERATED_RSA_BITS), as unencrypted PKCS#8 PEM: what a Secret or a key file holds. */
export function generateSigningKeyPem(bits = GENERATED_RSA_BITS): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/**
 * The keys that sign, at most two: `current` signs every bundle served without a key named, and the
 * configuration printed from now on; `previous`, during a rotation, still signs for the OPAs that
 * were configured with it, until every agent reports the current key (docs/opa.md, "Rotating the
 * signing key").
 */
export interface KeyRing {
  readonly current: SigningKey;
  readonly previous?: SigningKey | undefined;
}

/** The keys of a ring, current first. */
export function ringKeys(ring: KeyRing): SigningKey[] {
  return ring.previous && ring.previous.kid !== ring.current.kid ? [ring.current, ring.previous] : [ring.current];
}
