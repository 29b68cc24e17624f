// The console's foundations (issue 16), not served yet. Knip allows only names something imports, so the
// routes add the types they need (Session, SessionStore, Csrf, Verdict, Url, ...) here when they come.
export { SECURITY_HEADERS } from './csp.ts';
export { createCsrf, sameOrigin } from './csrf.ts';
export { escapeHtml, type Html, html, type Interpolation, raw, renderHtml, safeHref } from './html.ts';
export { createSignInLimiter, type SignInLimitOptions } from './ratelimit.ts';
export {
  clearedSessionCookie,
  createSessionStore,
  type Principal,
  parseCookies,
  type SessionOptions,
  sessionCookie,
  sessionIdOf,
} from './session.ts';
