import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCsrf, hostOrigin, sameOrigin } from './csrf.ts';

const secret = new Uint8Array(32).fill(7);
const session = 'A'.repeat(43);

describe('CSRF tokens', () => {
  it('are the HMAC-SHA256 of the session id under the process secret, in base64url', () => {
    const token = createCsrf(secret).token(session);
    const expected = createHmac('sha256', Buffer.from(secret)).update('acl-operator console csrf v1\0').update(session).digest('base64url');
    expect(token).toBe(expected);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("accept the session's own token only", () => {
    const csrf = createCsrf(secret);
    const token = csrf.token(session);
    expect(csrf.verify(session, token)).toBe(true);
    expect(csrf.verify('B'.repeat(43), token)).toBe(false);
    expect(createCsrf(new Uint8Array(32).fill(8)).verify(session, token)).toBe(false);
    const flipped = (token[0] === 'A' ? 'B' : 'A') + token.slice(1);
    expect(csrf.verify(session, flipped)).toBe(false);
  });

  it('refuse a missing, empty, truncated, padded or over-long token without throwing', () => {
    const csrf = createCsrf(secret);
    const token = csrf.token(session);
    for (const bad of [undefined, '', token.slice(0, 42), `${token}=`, `${token}A`, `${token.slice(0, 42)}+`]) {
      expect(csrf.verify(session, bad), String(bad)).toBe(false);
    }
  });

  it('need a secret of at least 32 bytes', () => {
    expect(() => createCsrf(new Uint8Array(16))).toThrow(/at least 32 bytes/);
  });
});

describe('sameOrigin', () => {
  const home = 'http://127.0.0.1:8080';

  it.each([
    [{ origin: 'http://127.0.0.1:8080' }, true],
    [{ origin: 'http://127.0.0.1:8081' }, false],
    [{ origin: 'http://localhost:8080' }, false],
    [{ origin: 'https://127.0.0.1:8080' }, false],
    [{ origin: 'http://evil.example', 'sec-fetch-site': 'same-origin' }, false],
    [{ origin: 'null', 'sec-fetch-site': 'same-origin' }, true],
    [{ origin: 'null', 'sec-fetch-site': 'cross-site' }, false],
    [{ origin: 'null' }, false],
    [{ 'sec-fetch-site': 'same-origin' }, true],
    [{ 'sec-fetch-site': 'same-site' }, false],
    [{ 'sec-fetch-site': 'none' }, false],
    [{ 'sec-fetch-site': 'cross-site', referer: 'http://127.0.0.1:8080/console' }, false],
    [{ referer: 'http://127.0.0.1:8080/console/connectors' }, true],
    [{ referer: 'http://127.0.0.1:8080.evil.example/console' }, false],
    [{ referer: 'not a url' }, false],
    [{ origin: ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'] }, false],
    [{}, false],
  ])('%j → %s', (headers, same) => {
    expect(sameOrigin(headers, home)).toBe(same);
  });

  it('compares with the origin of the expected URL, not its path', () => {
    expect(sameOrigin({ origin: 'http://127.0.0.1:8080' }, 'http://127.0.0.1:8080/console/')).toBe(true);
    expect(() => sameOrigin({}, 'not a url')).toThrow(/not an origin/);
  });
});

describe('hostOrigin', () => {
  it.each([
    ['127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['LOCALHOST:8080', 'http://localhost:8080'],
    ['[::1]:8080', 'http://[::1]:8080'],
    ['console.example', 'http://console.example'],
    ['console.example:80', 'http://console.example'],
  ])('%j names %s', (host, origin) => {
    expect(hostOrigin(host)).toBe(origin);
  });

  it.each([undefined, '', 'a b', '[::1', 'exa mple:1', '%', 'a:99999', 'a@b', 'a/b', 'a?b', 'a#b', 'a\\b', 'a\tb'])(
    '%j names none',
    (host) => {
      expect(hostOrigin(host)).toBeUndefined();
    },
  );
});
