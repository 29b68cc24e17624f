import { describe, expect, it } from 'vitest';
import { SECURITY_HEADERS } from './csp.ts';

describe('the console security headers', () => {
  it('are the ones of the design', () => {
    expect(SECURITY_HEADERS).toMatchInlineSnapshot(`
      {
        "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Referrer-Policy": "same-origin",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
      }
    `);
  });

  it('allow no inline or evaluated script and no source but our own', () => {
    const csp = SECURITY_HEADERS['Content-Security-Policy'] ?? '';
    expect(csp).not.toMatch(/unsafe-|\*|https?:|nonce-|sha256-/);
    const directives = new Map(csp.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]));
    expect(directives.get('default-src')).toBe("'none'");
    expect(directives.get('script-src')).toBe("'self'");
    expect(directives.get('frame-ancestors')).toBe("'none'");
  });

  it('cannot be changed by a route', () => {
    expect(Object.isFrozen(SECURITY_HEADERS)).toBe(true);
  });
});
