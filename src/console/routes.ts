// What a console route is: a method, an Express path under /console, and a function from a signed-in
// request to an answer. Pages are pure renderers behind these handlers; app.ts does sessions, CSRF,
// tenant checks and the HTTP around them.
import type { Snapshot } from '../store/index.ts';
import type { ConsoleDeps } from './deps.ts';
import type { Html, Url } from './html.ts';
import type { NavKey } from './layout.ts';
import type { Principal } from './session.ts';

export interface Flash {
  readonly tone: 'ok' | 'warn' | 'bad' | 'info';
  readonly text: string;
}

export interface PageRequest {
  readonly principal: Principal;
  /** The session's CSRF token: every form carries it as `_csrf`. */
  readonly csrf: string;
  /** The route's `:tenant`, already checked visible to the principal (undefined: no such param). */
  readonly tenant: string | undefined;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** A POST's form fields (urlencoded). */
  readonly form: URLSearchParams | undefined;
  readonly deps: ConsoleDeps;
  readonly snapshot: Snapshot;
  /** The tenants the principal sees, sorted (read once per request). */
  readonly tenants: readonly string[];
  readonly nowMs: number;
  /** What the last action said, shown once at the top of the next page. */
  readonly flash: Flash | undefined;
}

export type PageAnswer =
  | {
      readonly kind: 'page';
      readonly title: string;
      readonly body: Html;
      readonly status?: number;
      readonly nav?: NavKey;
    }
  /** 303 to a console URL; `flash` is shown on the page it leads to. */
  | { readonly kind: 'redirect'; readonly to: Url; readonly flash?: Flash }
  | {
      readonly kind: 'problem';
      readonly status: 400 | 403 | 404 | 409 | 422 | 500 | 503;
      readonly title: string;
      readonly message: string;
    };

export interface ConsoleRoute {
  readonly method: 'GET' | 'POST';
  /** Express path under /console, e.g. `/t/:tenant/bundles/:bundle`; `:tenant` is checked against the principal. */
  readonly path: string;
  /** Changes an object: admin only (a tenant's API key reads). */
  readonly action?: boolean;
  handle(req: PageRequest): PageAnswer | Promise<PageAnswer>;
}

/** A 404 that says the same whether the thing is missing or belongs to another tenant. */
export function notFound(what: string): PageAnswer {
  return { kind: 'problem', status: 404, title: 'Not found', message: `There is no ${what} here.` };
}
