// A bundle's sync activity (service spec 2.5: date, revision, client IP, user agent, status) as the
// bundle page shows it: the filters a GET form sends (status, client IP, user-agent text, revision),
// read once from the query with a message for each bad value, and the filtered table. Pure.
import type { SyncRecord } from '../../store/index.ts';
import { type Html, html, type Url } from '../html.ts';
import { badge, notice, table } from '../layout.ts';

/** The statuses the filter always offers (OPA's poll answers); any other seen in the log is offered too. */
const OFFERED_STATUSES: readonly number[] = [200, 304, 401, 403];

const STATUS_TEXT: Readonly<Record<number, string>> = { 200: 'OK', 304: 'Not Modified', 401: 'Unauthorized', 403: 'Forbidden' };

export interface ActivityFilter {
  /** undefined: every status. */
  readonly status: number | undefined;
  /** Substring of the client IP; '' matches all. */
  readonly clientIp: string;
  /** Case-insensitive substring of the user agent; '' matches all. */
  readonly userAgent: string;
  readonly revision: number | undefined;
}

/** The filter a query asks for, the values as typed (to refill the form), and what was wrong with them. */
export interface ParsedActivityFilter {
  readonly filter: ActivityFilter;
  readonly typed: { readonly status: string; readonly ip: string; readonly ua: string; readonly revision: string };
  readonly problems: readonly string[];
}

/** The longest filter text kept (a user agent is stored up to 256 characters). */
const MAX_FILTER_TEXT = 256;

/** Reads the filter fields `status`, `ip`, `ua` and `revision`; a bad value is left out of the filter and named in `problems`. */
export function parseActivityFilter(query: URLSearchParams): ParsedActivityFilter {
  const typed = {
    status: (query.get('status') ?? '').trim(),
    ip: (query.get('ip') ?? '').trim().slice(0, MAX_FILTER_TEXT),
    ua: (query.get('ua') ?? '').trim().slice(0, MAX_FILTER_TEXT),
    revision: (query.get('revision') ?? '').trim(),
  };
  const problems: string[] = [];
  let status: number | undefined;
  if (typed.status !== '' && typed.status !== 'all') {
    if (/^[1-5]\d\d$/.test(typed.status)) status = Number(typed.status);
    else problems.push(`Status ${JSON.stringify(typed.status.slice(0, 40))} is not an HTTP status: showing every status.`);
  }
  let revision: number | undefined;
  if (typed.revision !== '') {
    if (/^\d{1,15}$/.test(typed.revision)) revision = Number(typed.revision);
    else problems.push(`Revision ${JSON.stringify(typed.revision.slice(0, 40))} is not a whole number: showing every revision.`);
  }
  return { filter: { status, clientIp: typed.ip, userAgent: typed.ua, revision }, typed, problems };
}

/** The records the filter keeps, in their order (newest first). */
export function filterActivity(records: readonly SyncRecord[], f: ActivityFilter): SyncRecord[] {
  const ua = f.userAgent.toLowerCase();
  return records.filter(
    (r) =>
      (f.status === undefined || r.status === f.status) &&
      (f.revision === undefined || r.revision === f.revision) &&
      (f.clientIp === '' || r.clientIp.includes(f.clientIp)) &&
      (ua === '' || r.userAgent.toLowerCase().includes(ua)),
  );
}

/** An HTTP status as a badge: served (200), unchanged (304), refused (4xx), other. */
function statusBadge(status: number): Html {
  const text = `${status}${STATUS_TEXT[status] ? ` ${STATUS_TEXT[status]}` : ''}`;
  return badge(text, status === 200 ? 'ok' : status === 304 ? 'info' : status === 401 || status === 403 ? 'bad' : 'warn');
}

/** `2026-11-24T10:00:01.000Z` as `2026-11-24 10:00:01 UTC`, exact value in the markup. */
export function utcTime(iso: string): Html {
  const text = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(iso) ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : iso;
  return html`<time datetime="${iso}">${text}</time>`;
}

function filterForm(p: ParsedActivityFilter, action: Url, seen: readonly number[]): Html {
  const statuses = [...new Set([...OFFERED_STATUSES, ...seen])].sort((a, b) => a - b);
  const current = p.filter.status === undefined ? 'all' : String(p.filter.status);
  const option = (value: string, label: string) => html`<option value="${value}"${value === current && html` selected`}>${label}</option>`;
  return html`<form method="get" action="${action}" class="filters" role="search" aria-label="Filter sync activity">
    <div><label for="f-status">Status</label>
      <select id="f-status" name="status">${option('all', 'All')}${statuses.map((s) => option(String(s), `${s}${STATUS_TEXT[s] ? ` ${STATUS_TEXT[s]}` : ''}`))}</select></div>
    <div><label for="f-ip">Client IP</label>
      <input id="f-ip" type="search" name="ip" value="${p.typed.ip}" maxlength="256" autocomplete="off" /></div>
    <div><label for="f-ua">User agent contains</label>
      <input id="f-ua" type="search" name="ua" value="${p.typed.ua}" maxlength="256" autocomplete="off" /></div>
    <div><label for="f-revision">Revision</label>
      <input id="f-revision" type="text" inputmode="numeric" name="revision" value="${p.typed.revision}" size="6" autocomplete="off" /></div>
    <div><button type="submit">Filter</button> <a href="${action}">Clear</a></div>
  </form>`;
}

/**
 * The sync activity section: the filter form (outside the live region, so a refresh never takes what
 * someone is typing) and, in region `bundle-activity`, "N of M records" and the table.
 */
export function activitySection(records: readonly SyncRecord[], p: ParsedActivityFilter, action: Url): Html {
  const shown = filterActivity(records, p.filter);
  const seen = [...new Set(records.map((r) => r.status))];
  const filtered = shown.length !== records.length || p.filter.status !== undefined || p.filter.revision !== undefined;
  const rows = shown.map(
    (r) => html`<tr>
      <td>${utcTime(r.time)}</td>
      <td class="num">${r.revision ?? ''}</td>
      <td><code>${r.clientIp}</code></td>
      <td class="mono">${r.userAgent === '' ? html`<span class="muted">none</span>` : r.userAgent}</td>
      <td>${statusBadge(r.status)}</td>
    </tr>`,
  );
  return html`<section aria-labelledby="activity-h">
    <h2 id="activity-h">Sync activity</h2>
    ${filterForm(p, action, seen)}
    ${p.problems.map((m) => notice('warn', m))}
    <div id="bundle-activity" data-live>
      <p class="muted" id="activity-count">${shown.length} of ${records.length} records${filtered ? ' match the filter' : ''} (the newest requests
        of this bundle's connector are kept).</p>
      ${table(
        'Sync activity',
        ['Date', 'Revision', 'Client IP', 'User Agent', 'Status'],
        rows,
        records.length === 0 ? 'No OPA has requested this bundle yet.' : 'No record matches the filter.',
      )}
    </div>
  </section>`;
}
