// `.signatures.json` as OPA defines and verifies it (OPA's bundle/sign.go and verify.go, checked
// against real OPA 0.61 and 1.1 in test/opa/signing.test.ts): {"signatures": [JWT]}, one JWT whose
// header names the key (`kid`) and whose payload lists every other file of the archive with its
// SHA-256. OPA hashes a structured file (`.manifest`, data.json) not by its bytes but by its JSON
// value with object keys sorted and no HTML escaping; other files (policy.rego) by their bytes.
import { createHash, createPublicKey, sign, verify, constants } from 'node:crypto';
import type { SigningKey } from './keys.ts';

/** The archive member OPA reads the signatures from. */
export const SIGNATURES_FILE = '.signatures.json';

/** One entry of the JWT's `files`. */
export interface SignedFile {
  readonly name: string;
  /** SHA-256, hex, as OPA computes it for this file (structuredHash or the bytes' hash). */
  readonly hash: string;
}

/**
 * A string as Go's encoding/json writes it with HTML escaping off (OPA's hasher): `"` `\` and control
 * characters escaped, U+2028 and U+2029 escaped, a lone surrogate replaced by U+FFFD.
 */
function goString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c < 0x20 || c === 0x2028 || c === 0x2029) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      out += s.slice(i, i + 2);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) out += '\ufffd';
    else out += s.charAt(i);
  }
  return `${out}"`;
}

/** A JSON value as OPA's hasher encodes it: keys sorted by their UTF-8 bytes, no whitespace. */
function goJson(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return goString(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error('a structured file holds a number JSON cannot write');
    return JSON.stringify(value);
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(goJson).join(',')}]`;
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return `{${keys.map((k) => `${goString(k)}:${goJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  throw new Error(`a structured file holds a ${typeof value}`);
}

/** The hash OPA computes for a structured file (`.manifest`, data.json): of its JSON value, canonical. */
export function structuredHash(jsonText: string): string {
  return createHash('sha256')
    .update(goJson(JSON.parse(jsonText)))
    .digest('hex');
}

const b64url = (data: string | Buffer): string => Buffer.from(data).toString('base64url');

/**
 * `.signatures.json` for these files, signed with `key` (RS256: deterministic, so the same files and
 * key always give the same text). `kid` in the header selects the key in OPA's `keys` when the OPA
 * configuration names none; `keyid` in the payload is the older place OPA also reads.
 */
export function signaturesFile(files: readonly SignedFile[], key: SigningKey): string {
  const header = b64url(JSON.stringify({ alg: 'RS256', kid: key.kid }));
  const payload = b64url(
    JSON.stringify({ files: files.map((f) => ({ name: f.name, hash: f.hash, algorithm: 'SHA-256' })), keyid: key.kid }),
  );
  const input = `${header}.${payload}`;
  const signature = sign('sha256', Buffer.from(input), { key: key.privateKey, padding: constants.RSA_PKCS1_PADDING });
  return `${JSON.stringify({ signatures: [`${input}.${b64url(signature)}`] })}\n`;
}

/** What a `.signatures.json` says, when its one JWT verifies with `publicKeyPem`; undefined otherwise. */
export function verifySignaturesFile(
  text: string,
  publicKeyPem: string,
): { readonly kid: string | undefined; readonly files: readonly SignedFile[] } | undefined {
  let jwt: unknown;
  try {
    jwt = (JSON.parse(text) as { signatures?: unknown }).signatures;
  } catch {
    return undefined;
  }
  if (!Array.isArray(jwt) || jwt.length !== 1 || typeof jwt[0] !== 'string') return undefined;
  const [header, payload, signature] = jwt[0].split('.');
  if (header === undefined || payload === undefined || signature === undefined) return undefined;
  const ok = verify(
    'sha256',
    Buffer.from(`${header}.${payload}`),
    { key: createPublicKey(publicKeyPem), padding: constants.RSA_PKCS1_PADDING },
    Buffer.from(signature, 'base64url'),
  );
  if (!ok) return undefined;
  const h = JSON.parse(Buffer.from(header, 'base64url').toString()) as { kid?: string };
  const p = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { files: { name: string; hash: string }[] };
  return { kid: h.kid, files: p.files.map((f) => ({ name: f.name, hash: f.hash })) };
}
