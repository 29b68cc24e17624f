// What an `agent_` token is (service spec 5): the prefix and 32 random bytes in base64url. Tokens are
// held only as SHA-256 hashes; a presented token is hashed and compared in constant time.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const TOKEN_PREFIX = 'agent_';
const TOKEN_BYTES = 32;

/** A new connector token: `agent_` + 43 base64url characters. */
export function generateToken(random: (size: number) => Uint8Array = randomBytes): string {
  return `${TOKEN_PREFIX}${Buffer.from(random(TOKEN_BYTES)).toString('base64url')}`;
}

/** SHA-256 of a token, as hex: the only form a token is kept in memory. */
export function hashToken(token: string): string {
  // The one-shot hash: no Hash object per call (it runs on every request).
  return hash('sha256', token, 'hex');
}

/** Whether two token hashes (hex) are equal, compared in constant time. */
export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/**
 * The credential of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 6750),
 * or undefined when the header is absent or has another scheme or no credential.
 */
export function parseBearer(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^[ \t]*bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i.exec(header);
  return m ? m[1] : undefined;
}
