// Sign-in and sign-out (docs/console.md, "Access"). A key is posted in the form body (never a URL),
// hashed, and looked up: an admin key (Secrets labelled acl.policyagent.dev/console-admin) opens every
// tenant, a tenant's API key opens that tenant. Wrong keys are rate-limited per client IP and overall,
// which a key too long to guess passes; the key is never logged, only whether it opened something.
import type { IncomingMessage } from 'node:http';
import type { Request, Response, Router } from 'express';
import { hashToken } from '../auth/index.ts';
import type { Csrf } from './csrf.ts';
import { sameOrigin } from './csrf.ts';
import type { ConsoleDeps } from './deps.ts';
import { type Html, html, safeHref, type Url } from './html.ts';
import { notice, page } from './layout.ts';
import { consoleUrl } from './paths.ts';
import { createSignInLimiter } from './ratelimit.ts';
import { clearedSessionCookie, type Principal, type Session, type SessionStore, sessionCookie, sessionIdOf } from './session.ts';

export interface SignIn {
  readonly deps: ConsoleDeps;
  readonly sessions: SessionStore;
  readonly csrf: Csrf;
  readonly assets: { readonly css: Url; readonly js: Url };
  readonly secure: boolean;
  originOf(req: IncomingMessage): string;
  send(res: Response, status: number, body: Html, extra?: Record<string, string>): void;
  problem(res: Response, status: number, title: string, message: string, session?: Session): void;
}

/** Where to go after sign-in: a console page only (never another site: no open redirect). */
function nextOf(value: unknown): Url {
  if (typeof value === 'string' && /^\/console\/[A-Za-z0-9._~%/?=&-]*$/.test(value) && !value.includes('//')) {
    const url = safeHref(value);
    if (url) return url;
  }
  return consoleUrl([]);
}

function form(s: SignIn, next: Url, message: Html | undefined): Html {
  return page({
    title: 'Sign in',
    assets: s.assets,
    body: html`<div class="signin card">
      <h1>Sign in to the console</h1>
      ${message ?? ''}
      <form method="post" action="${consoleUrl(['signin'])}">
        <input type="hidden" name="next" value="${next.toString()}" />
        <label for="key">Key</label>
        <input id="key" name="key" type="password" autocomplete="off" spellcheck="false" required autofocus aria-describedby="key-help" />
        <p id="key-help" class="muted">The admin key (every tenant, actions allowed), or a tenant's API key (that tenant, read only).
          ${s.deps.mode === 'standalone' ? 'Standalone mode keeps its admin key in the state folder: console-admin-key.' : 'Admin keys are Secrets labelled acl.policyagent.dev/console-admin: "true" in the operator\'s namespace.'}</p>
        <p><button type="submit" class="primary">Sign in</button></p>
      </form>
    </div>`,
  });
}

/**
 * Keys at least this long are looked at even over the sign-in limit (docs/design/console.md, "Access"):
 * random, they are beyond guessing at any rate (the generated admin key is 43 characters), so a flood
 * of wrong keys cannot keep their holder out. Shorter keys stay behind the limit.
 */
export const UNGUESSABLE_KEY_LENGTH = 32;
/** How long a read of the admin keys serves sign-ins: a flood of them costs one read (a LIST in Kubernetes mode) per this. */
export const ADMIN_KEYS_MAX_AGE_MS = 5_000;

/**
 * The admin keys read at most once per ADMIN_KEYS_MAX_AGE_MS: concurrent sign-ins share one read, and a
 * failed read is kept as long as a good one (a flood must not become a flood of LISTs on an API server
 * that fails).
 */
function cachedAdminKeys(read: () => Promise<ReadonlySet<string>>, now: () => number): () => Promise<ReadonlySet<string>> {
  let last: { readonly atMs: number; readonly hashes: Promise<ReadonlySet<string>> } | undefined;
  return () => {
    const atMs = now();
    if (last === undefined || atMs - last.atMs >= ADMIN_KEYS_MAX_AGE_MS || atMs < last.atMs) {
      last = { atMs, hashes: Promise.resolve().then(read) };
      // Each sign-in awaits it and says what failed; the kept promise itself must not count as unhandled.
      last.hashes.catch(() => undefined);
    }
    return last.hashes;
  };
}

/** Refusals of one kind are logged at most once per this, with how many there were: a flood is one line, not a flood of lines. */
const REFUSALS_LOG_MS = 10_000;

/** Says whether a refusal of `kind` is logged now, and how many of that kind since the last line (this one included). */
function refusalLog(now: () => number): (kind: string) => number | undefined {
  const last = new Map<string, { atMs: number; since: number }>();
  return (kind) => {
    const atMs = now();
    const seen = last.get(kind);
    if (seen && atMs - seen.atMs < REFUSALS_LOG_MS && atMs >= seen.atMs) {
      seen.since++;
      return undefined;
    }
    last.set(kind, { atMs, since: 0 });
    return (seen?.since ?? 0) + 1;
  };
}

export function signInRoutes(router: Router, s: SignIn): void {
  const limiter = createSignInLimiter({ now: s.deps.now });
  const adminKeyHashes = cachedAdminKeys(() => s.deps.adminKeyHashes(), s.deps.now);
  const log = s.deps.log;
  const logNow = refusalLog(s.deps.now);

  router.get('/signin', (req: Request, res: Response) => {
    s.send(res, 200, form(s, nextOf(req.query['next']), undefined));
  });

  router.post('/signin', async (req: Request, res: Response) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const next = nextOf(body['next']);
    // Login CSRF: a foreign page must not sign a browser in with the attacker's key.
    if (!sameOrigin(req.headers, s.originOf(req))) {
      s.problem(res, 403, 'Refused', 'This sign-in form came from another site.');
      return;
    }
    const ip = req.socket.remoteAddress ?? 'unknown';
    const key = typeof body['key'] === 'string' ? body['key'].trim() : '';
    // Only wrong keys count against the limit (a right one gives its attempt back); over it, a short key
    // is not even looked at, while one too long to guess still is.
    const verdict = limiter.attempt(ip);
    const tooMany = (retryAfterSeconds: number): void => {
      const attempts = logNow('too many');
      if (attempts !== undefined) log.warn({ module: 'console', clientIp: ip, attempts }, 'Console sign-in refused: too many attempts');
      s.send(res, 429, form(s, next, notice('bad', `Too many sign-in attempts. Try again in ${retryAfterSeconds} s.`)), {
        'Retry-After': String(retryAfterSeconds),
      });
    };
    if (!verdict.ok && key.length < UNGUESSABLE_KEY_LENGTH) {
      tooMany(verdict.retryAfterSeconds);
      return;
    }
    const found = key === '' ? { principal: undefined } : await principalOf(s.deps, key, adminKeyHashes);
    const principal = found.principal;
    if (!principal && found.adminKeysError !== undefined) {
      const attempts = logNow('unreadable');
      if (attempts !== undefined)
        log.error({ module: 'console', err: found.adminKeysError, attempts }, 'Console sign-in: the admin keys could not be read');
      s.send(
        res,
        503,
        form(s, next, notice('bad', `The admin keys could not be read (${found.adminKeysError}); a tenant's API key still signs in.`)),
      );
      return;
    }
    if (!principal && !verdict.ok) {
      tooMany(verdict.retryAfterSeconds);
      return;
    }
    if (!principal) {
      const attempts = logNow('wrong');
      if (attempts !== undefined) log.warn({ module: 'console', clientIp: ip, attempts }, 'Console sign-in refused: the key opens nothing');
      s.send(res, 401, form(s, next, notice('bad', 'That key opens nothing here: neither an admin key nor an API key of a tenant.')));
      return;
    }
    if (verdict.ok) limiter.succeeded(ip);
    const session = s.sessions.create(principal);
    log.info(
      { module: 'console', clientIp: ip, principal: principal.kind === 'admin' ? 'admin' : `tenant ${principal.tenant}` },
      'Console sign-in',
    );
    res.set('Set-Cookie', sessionCookie(session.id, s.secure));
    res.redirect(303, next.toString());
  });

  router.post('/signout', (req: Request, res: Response) => {
    const id = sessionIdOf(req.headers.cookie);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const token = typeof body['_csrf'] === 'string' ? body['_csrf'] : undefined;
    const session = id === undefined ? undefined : s.sessions.get(id);
    // A sign-out another site posts (or a stale form) is refused, and the browser keeps its cookie.
    if (!sameOrigin(req.headers, s.originOf(req)) || (session !== undefined && !s.csrf.verify(session.id, token))) {
      s.problem(res, 403, 'Refused', 'This sign-out form is out of date or came from another site.', session);
      return;
    }
    if (session !== undefined) s.sessions.destroy(session.id);
    res.set('Set-Cookie', clearedSessionCookie(s.secure));
    res.redirect(303, '/console/signin');
  });
}

/** Who a key signs in as: an admin, a tenant, or nobody (and why the admin keys could not be read, if so). */
async function principalOf(
  deps: ConsoleDeps,
  key: string,
  adminKeyHashes: () => Promise<ReadonlySet<string>>,
): Promise<{ principal: Principal | undefined; adminKeysError?: string }> {
  const hash = hashToken(key);
  // A tenant's key is found in memory first: signing in with it never costs a read of the admin keys
  // (in Kubernetes mode a LIST on the API server).
  const holder = deps.store.snapshot().apiKeys.get(hash);
  if (holder) return { principal: { kind: 'tenant', tenant: holder.tenant, keyHash: hash } };
  try {
    if ((await adminKeyHashes()).has(hash)) return { principal: { kind: 'admin' } };
    return { principal: undefined };
  } catch (err) {
    return { principal: undefined, adminKeysError: err instanceof Error ? err.message : String(err) };
  }
}
