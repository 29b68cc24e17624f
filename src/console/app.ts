// The console's HTTP side (docs/console.md): Express on its own listener. Every response carries the
// security headers; every page but sign-in needs a session; every POST needs the session's CSRF token
// and a same-origin request; a tenant's key sees only its tenant, and only an admin acts. Keys never
// travel in a URL and are never logged.
import { createHash } from 'node:crypto';
import type { IncomingMessage, RequestListener } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { SECURITY_HEADERS } from './csp.ts';
import { type Csrf, createCsrf, hostOrigin, sameOrigin } from './csrf.ts';
import type { ConsoleDeps } from './deps.ts';
import { type Html, html, renderHtml, type Url } from './html.ts';
import { notice, page } from './layout.ts';
import { createLiveHub, type LiveHub } from './live.ts';
import { consoleUrl } from './paths.ts';
import { ROUTES } from './pages/index.ts';
import type { Flash } from './routes.ts';
import { type Dispatch, routeHandler } from './dispatch.ts';
import { createSessionStore, type Session, type SessionStore, sessionIdOf } from './session.ts';
import { signInRoutes, type SignIn } from './signin.ts';
import { STYLE } from './assets/style.ts';
import { SCRIPT } from './assets/script.ts';

export interface ConsoleApp {
  readonly handler: RequestListener;
  readonly live: LiveHub;
  /** Ends the live streams (before the listener closes). */
  close(): void;
}

export interface ConsoleAppOptions {
  /** Moves whenever something a page of `tenant` shows may have changed (undefined: any tenant's, what the admin sees). */
  readonly version: (tenant: string | undefined) => string;
  /** Cookies get `Secure` (the console is served over TLS). */
  readonly secure?: boolean;
}

const MAX_FORM_BYTES = 256 * 1024;

function asset(text: string, type: string, ext: string): { path: string; body: Buffer; type: string } {
  const body = Buffer.from(text, 'utf8');
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { path: `/assets/console-${hash}.${ext}`, body, type };
}

/** The console's origin as the request names it; the Host guard in front of every route let only a readable Host through. */
function originOf(req: IncomingMessage): string {
  const origin = hostOrigin(req.headers.host);
  if (origin === undefined) throw new Error('a request without a readable Host got past the Host guard');
  return origin;
}

/** Which sessions still hold: a tenant's lasts only while its API key does (a deleted or moved key signs it out). */
function sessionChecks(deps: ConsoleDeps, sessions: SessionStore, flashes: Map<string, Flash>) {
  const keyHolds = (session: Session): boolean =>
    session.principal.kind !== 'tenant' ||
    session.principal.keyHash === undefined ||
    deps.store.snapshot().apiKeys.get(session.principal.keyHash)?.tenant === session.principal.tenant;
  const sessionOf = (req: Request): Session | undefined => {
    const id = sessionIdOf(req.headers.cookie);
    const session = id === undefined ? undefined : sessions.get(id);
    if (session && !keyHolds(session)) sessions.destroy(session.id);
    const live = session && keyHolds(session) ? session : undefined;
    // A flash left by a session that ended goes with it.
    if (!live && id !== undefined) flashes.delete(id);
    return live;
  };
  return { keyHolds, sessionOf };
}

type Problem = (res: Response, status: number, title: string, message: string, session?: Session) => void;

/** How the console answers: a page with no-store, and a problem page (signed in: with the session's shell). */
function responders(assets: { readonly css: Url; readonly js: Url }, csrf: Csrf) {
  const send = (res: Response, status: number, body: Html, extra: Record<string, string> = {}): void => {
    res.status(status).set({ 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', ...extra });
    res.send(renderHtml(body));
  };
  const problem: Problem = (res, status, title, message, session) => {
    const principal = session?.principal;
    send(
      res,
      status,
      page({
        title,
        assets,
        body: html`<h1>${title}</h1>${notice(status >= 500 ? 'bad' : 'warn', message)}<p><a href="${consoleUrl([])}">Back to the overview</a></p>`,
        ...(principal ? { principal, csrf: csrf.token(session.id) } : {}),
      }),
    );
  };
  return { send, problem };
}

export function createConsoleApp(deps: ConsoleDeps, options: ConsoleAppOptions): ConsoleApp {
  const secure = options.secure ?? false;
  const sessions = createSessionStore({ now: deps.now, random: deps.random });
  const csrf = createCsrf(deps.random(32));
  const flashes = new Map<string, Flash>();
  const css = asset(STYLE, 'text/css; charset=utf-8', 'css');
  const js = asset(SCRIPT, 'text/javascript; charset=utf-8', 'js');
  const assets = { css: consoleUrl(css.path.slice(1).split('/')), js: consoleUrl(js.path.slice(1).split('/')) };
  const { keyHolds, sessionOf } = sessionChecks(deps, sessions, flashes);
  // A stream follows what its session may see: its tenant's changes, or every tenant's for the admin.
  const live = createLiveHub({
    version: (id) => {
      const session = sessions.peek(id);
      if (session === undefined || !keyHolds(session)) return undefined;
      return options.version(session.principal.kind === 'admin' ? undefined : session.principal.tenant);
    },
  });
  const log = deps.log;

  const { send, problem } = responders(assets, csrf);
  const app = express();
  app.disable('x-powered-by');
  // Express's own error page shows a stack trace outside production: never here.
  app.set('env', 'production');
  app.set('etag', false);
  app.use((_req, res, next) => {
    res.set(SECURITY_HEADERS);
    next();
  });
  // Same-origin checks and redirects need the origin the Host header names: a request without a readable
  // one is the client's mistake (400), on every route, and no error of ours.
  app.use((req, res, next) => {
    if (hostOrigin(req.headers.host) !== undefined) {
      next();
      return;
    }
    problem(
      res,
      400,
      'Bad request',
      'The Host header is missing or is not a host name with an optional port, so the console cannot tell which site this request is for.',
    );
  });
  app.get('/', (_req, res) => res.redirect(303, '/console/'));
  const router = express.Router({ strict: false });
  app.use('/console', router);
  for (const a of [css, js]) {
    router.get(a.path, (_req, res) => {
      res.set({ 'Content-Type': a.type, 'Cache-Control': 'public, max-age=31536000, immutable' }).send(a.body);
    });
  }
  router.use(express.urlencoded({ extended: false, limit: MAX_FORM_BYTES, parameterLimit: 200 }));

  const signIn: SignIn = { deps, sessions, csrf, assets, secure, originOf, send, problem };
  signInRoutes(router, signIn);

  // Everything below needs a session.
  router.use((req, res, next) => {
    const session = sessionOf(req);
    if (session) {
      res.locals['session'] = session;
      next();
      return;
    }
    if (req.method === 'GET' && req.headers['x-console-live'] === undefined && req.path !== '/events') {
      const nextUrl = `/console${req.path}`;
      res.redirect(303, `/console/signin?${new URLSearchParams({ next: nextUrl }).toString()}`);
      return;
    }
    problem(res, 401, 'Signed out', 'Sign in again: the session ended or was never started.');
  });
  router.get('/events', (_req, res) => live.open(res, (res.locals['session'] as Session).id));
  // CSRF: every POST carries the session's token and comes from our own origin.
  router.post(/.*/, (req, res, next) => {
    const session = res.locals['session'] as Session;
    const body = req.body as Record<string, unknown> | undefined;
    const token = typeof body?.['_csrf'] === 'string' ? body['_csrf'] : undefined;
    if (!sameOrigin(req.headers, originOf(req)) || !csrf.verify(session.id, token)) {
      log.warn({ path: req.path, module: 'console' }, 'Refused a console action without a valid CSRF token or from another origin');
      problem(res, 403, 'Refused', 'This form is out of date or came from another site. Reload the page and try again.', session);
      return;
    }
    next();
  });

  const dispatch: Dispatch = { deps, csrf, flashes, assets, send, problem };
  for (const route of ROUTES) {
    if (route.method === 'GET') router.get(route.path, routeHandler(dispatch, route));
    else router.post(route.path, routeHandler(dispatch, route));
  }
  router.use((req, res) =>
    problem(res, 404, 'Not found', `There is no page ${req.path} in the console.`, res.locals['session'] as Session | undefined),
  );
  app.use(errorHandler(log, problem));
  return { handler: app, live, close: () => live.close() };
}

/** A body parser's refusal (too large, malformed) or a page that threw: a page that says so, never a stack. */
function errorHandler(log: ConsoleDeps['log'], problem: Problem): (err: unknown, req: Request, res: Response, next: NextFunction) => void {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const status =
      typeof err === 'object' && err !== null && 'status' in err && typeof err.status === 'number' && err.status < 500 ? err.status : 500;
    if (status === 500) log.error({ err, path: req.path, module: 'console' }, 'A console page failed');
    if (res.headersSent) {
      res.end();
      return;
    }
    const message =
      status === 413
        ? `The form is larger than ${MAX_FORM_BYTES / 1024} KB.`
        : status === 500
          ? 'The console failed on this page; the log says why.'
          : 'The request could not be read.';
    try {
      problem(res, status, status === 500 ? 'Console error' : 'Bad request', message, res.locals['session'] as Session | undefined);
    } catch (again) {
      log.error({ err: again, module: 'console' }, 'The console failed to render its error page');
      res.status(status).type('text/plain').send(message);
    }
  };
}
