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
  // With no-referrer, a browser sends `Origin: null` on our own form posts: sameOrigin() in csrf.ts
  // then reads Sec-Fetch-Site.
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
});
