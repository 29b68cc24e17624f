// The page shell every console page shares: one stylesheet and one script (no inline code: the CSP
// forbids it), a skip link, the navigation of the tenant in view, and who is signed in. Pure.
import { html, type Html, raw, type Url } from './html.ts';
import { consoleUrl, tenantUrl } from './paths.ts';
import type { Principal } from './session.ts';

export type NavKey = 'overview' | 'tenant' | 'connectors' | 'rules' | 'directory' | 'bundle' | 'none';

export interface Shell {
  readonly title: string;
  readonly body: Html;
  /** Signed out: no navigation. */
  readonly principal?: Principal;
  /** The tenant in view: its navigation, and what live updates refresh. */
  readonly tenant?: string;
  readonly tenants?: readonly string[];
  readonly nav?: NavKey;
  /** The session's CSRF token, for the sign-out form. */
  readonly csrf?: string;
  /** Asset URLs with their content hash (long-cached). */
  readonly assets: { readonly css: Url; readonly js: Url };
}

function link(href: Url, label: string, current: boolean): Html {
  return html`<a href="${href}"${current && raw(' aria-current="page"')}>${label}</a>`;
}

function navigation(s: Shell): Html {
  if (!s.principal) return html``;
  const t = s.tenant;
  const tenantLinks =
    t === undefined
      ? html``
      : html`<span class="sep" aria-hidden="true">/</span>
          ${link(tenantUrl(t), t, s.nav === 'tenant' || s.nav === 'rules' || s.nav === 'bundle')}
          ${link(tenantUrl(t, 'connectors'), 'Connectors', s.nav === 'connectors')}
          ${link(tenantUrl(t, 'directory'), 'Directory', s.nav === 'directory')}`;
  const who = s.principal.kind === 'admin' ? 'admin' : `tenant ${s.principal.tenant}`;
  return html`<nav class="top" aria-label="Console">
    ${link(consoleUrl([]), 'Overview', s.nav === 'overview')} ${tenantLinks}
    <span class="grow"></span>
    <span class="who">Signed in as ${who}</span>
    <form method="post" action="${consoleUrl(['signout'])}" class="inline">
      <input type="hidden" name="_csrf" value="${s.csrf ?? ''}" />
      <button type="submit" class="link">Sign out</button>
    </form>
  </nav>`;
}

/** A whole page. */
export function page(s: Shell): Html {
  return html`${raw('<!doctype html>')}
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${s.title} · acl-operator</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="${s.assets.css}" />
    <script src="${s.assets.js}" defer></script>
  </head>
  <body data-tenant="${s.tenant ?? ''}">
    <a class="skip" href="#main">Skip to content</a>
    <header>
      <span class="brand">acl-operator</span>
      ${navigation(s)}
    </header>
    <main id="main" tabindex="-1">${s.body}</main>
    <footer><span id="live" role="status" aria-live="polite"></span></footer>
  </body>
</html>`;
}

/** A labelled status badge: the text says it, the colour repeats it. */
export function badge(text: string, tone: 'ok' | 'warn' | 'bad' | 'muted' | 'info'): Html {
  return html`<span class="badge ${tone}">${text}</span>`;
}

/** A table that scrolls sideways on a phone instead of breaking the page; `caption` names it for screen readers. */
export function table(caption: string, head: readonly string[], rows: readonly Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${caption}">
    <table>
      <caption class="sr-only">${caption}</caption>
      <thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
      <tbody>${rows}</tbody>
    </table>
  </div>`;
}

/** A message box: a notice after an action, an error, a warning. */
export function notice(tone: 'ok' | 'warn' | 'bad' | 'info', body: Html | string): Html {
  return html`<div class="notice ${tone}" role="${tone === 'bad' ? 'alert' : 'status'}">${body}</div>`;
}

/** A time as a person reads it, with the exact ISO value in a tooltip. */
export function when(iso: string | undefined, nowMs: number): Html {
  if (iso === undefined) return html`<span class="muted">never</span>`;
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return html`${iso}`;
  const s = Math.round((nowMs - ms) / 1000);
  const ago =
    s < 0
      ? 'just now'
      : s < 60
        ? `${s} s ago`
        : s < 3600
          ? `${Math.floor(s / 60)} min ago`
          : s < 86_400
            ? `${Math.floor(s / 3600)} h ago`
            : `${Math.floor(s / 86_400)} d ago`;
  return html`<time datetime="${iso}" title="${iso}">${ago}</time>`;
}

/** Rows a table shows at most: a page stays small and quick however many objects a tenant has. */
export const ROWS_SHOWN = 100;

/** The first `limit` items, and a sentence saying how many more there are (empty when none). */
export function firstOf<T>(items: readonly T[], what: string, limit = ROWS_SHOWN): { readonly items: readonly T[]; readonly note: Html } {
  if (items.length <= limit) return { items, note: html`` };
  return { items: items.slice(0, limit), note: html`<p class="muted">Showing the first ${limit} of ${items.length} ${what}.</p>` };
}
