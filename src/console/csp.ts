// The security headers of every console response (docs/design/console.md, "Access"). The policy allows
// our own script, style and images only, no inline script or style (pages link one static JS and one
// CSS file), no framing, no <base>, and forms that post only to us; so even a string that escaped the
// html template could not run.

/** Content-Security-Policy and its companions, set on every console response. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on our own form posts,
  // and the CSRF check would rest on Sec-Fetch-Site alone. Nothing leaves for another site either way.
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
});
