// One console route as an Express handler: the tenant check (a tenant the principal may not see is the
// same 404 as one that does not exist), the admin check of actions, the PageRequest, and the answer
// (a page in the shell, a 303 with a flash for the next page, or a problem page).
import type { NextFunction, Request, Response } from 'express';
import type { Csrf } from './csrf.ts';
import type { ConsoleDeps } from './deps.ts';
import { type Html, html, type Url } from './html.ts';
import { notice, page } from './layout.ts';
import type { ConsoleRoute, Flash, PageAnswer, PageRequest } from './routes.ts';
import type { Session } from './session.ts';
import { requestReader, visibleTenants } from './view.ts';
import type { ObjectReader } from '../controller/index.ts';

export interface Dispatch {
  readonly deps: ConsoleDeps;
  readonly csrf: Csrf;
  /** What the last action of a session said, shown once on its next page. */
  readonly flashes: Map<string, Flash>;
  readonly assets: { readonly css: Url; readonly js: Url };
  send(res: Response, status: number, body: Html, extra?: Record<string, string>): void;
  problem(res: Response, status: number, title: string, message: string, session?: Session): void;
}

function requestOf(
  d: Dispatch,
  req: Request,
  session: Session,
  params: Record<string, string>,
  tenants: readonly string[],
  objects: ObjectReader,
): PageRequest {
  const live = req.headers['x-console-live'] !== undefined;
  const flash = req.method === 'GET' && !live ? d.flashes.get(session.id) : undefined;
  if (flash) d.flashes.delete(session.id);
  return {
    principal: session.principal,
    csrf: d.csrf.token(session.id),
    tenant: params['tenant'],
    params,
    query: new URLSearchParams(req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : ''),
    form: req.method === 'POST' ? new URLSearchParams(Object.entries((req.body ?? {}) as Record<string, string>)) : undefined,
    deps: { ...d.deps, objects },
    snapshot: d.deps.store.snapshot(),
    tenants,
    nowMs: d.deps.now(),
    flash,
  };
}

function answer(d: Dispatch, res: Response, session: Session, request: PageRequest, a: PageAnswer): void {
  if (a.kind === 'redirect') {
    if (a.flash) d.flashes.set(session.id, a.flash);
    res.redirect(303, a.to.toString());
    return;
  }
  if (a.kind === 'problem') {
    d.problem(res, a.status, a.title, a.message, session);
    return;
  }
  const body = request.flash ? html`${notice(request.flash.tone, request.flash.text)}${a.body}` : a.body;
  const shell = page({
    title: a.title,
    body,
    principal: session.principal,
    csrf: request.csrf,
    assets: d.assets,
    tenants: request.tenants,
    ...(request.tenant ? { tenant: request.tenant } : {}),
    ...(a.nav ? { nav: a.nav } : {}),
  });
  d.send(res, a.status ?? 200, shell);
}

export function routeHandler(d: Dispatch, route: ConsoleRoute): (req: Request, res: Response, next: NextFunction) => void {
  const handle = async (req: Request, res: Response): Promise<void> => {
    const session = res.locals['session'] as Session;
    const params = Object.fromEntries(Object.entries(req.params).map(([k, v]) => [k, String(v)]));
    const tenant = params['tenant'];
    const objects = requestReader(d.deps.objects);
    const tenants = visibleTenants(session.principal, objects, d.deps.store.snapshot());
    if (tenant !== undefined && !tenants.includes(tenant)) {
      d.problem(res, 404, 'Not found', `There is no tenant ${tenant} here.`, session);
      return;
    }
    if (route.action && session.principal.kind !== 'admin') {
      d.problem(res, 403, 'Admin only', "Actions need the console's admin key; a tenant's API key can read, not change.", session);
      return;
    }
    const request = requestOf(d, req, session, params, tenants, objects);
    answer(d, res, session, request, await route.handle(request));
  };
  return (req, res, next) => {
    handle(req, res).catch(next);
  };
}
