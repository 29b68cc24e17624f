import { describe, expect, it } from 'vitest';
import { generateToken, hashesEqual, hashToken, parseBearer } from './index.ts';

describe('connector tokens', () => {
  it('are agent_ followed by 32 random bytes in base64url', () => {
    const token = generateToken();
    expect(token).toMatch(/^agent_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token.slice(6), 'base64url')).toHaveLength(32);
    expect(generateToken()).not.toBe(token);
  });

  it('use the random source they are given', () => {
    expect(generateToken((n) => new Uint8Array(n).fill(255))).toBe(`agent_${'_'.repeat(42)}8`);
  });

  it('match only their own hash', () => {
    const token = generateToken();
    expect(hashesEqual(hashToken(token), hashToken(token))).toBe(true);
    expect(hashesEqual(hashToken(token), hashToken(`${token}x`))).toBe(false);
    expect(hashesEqual(hashToken(token), hashToken(''))).toBe(false);
  });
});

describe('parseBearer', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer agent_x-y_z', 'agent_x-y_z'],
    ['BEARER  tok==  ', 'tok=='],
  ])('reads %j', (header, token) => {
    expect(parseBearer(header)).toBe(token);
  });

  it.each([undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearer a b', 'Bearer a,b', 'Bearerabc'])('refuses %j', (header) => {
    expect(parseBearer(header)).toBeUndefined();
  });
});
