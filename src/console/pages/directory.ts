// The directory browser (docs/console.md, "Directory"): a tenant's Directory objects (phase, entities
// in effect, problems) and the entities in effect, searched by a text query over type, id and property
// values and filtered by type, at most SHOWN_AT_MOST at a time, each with the Directories that list it.
// The route gathers; renderDirectory and searchEntities are pure.
import { EMPTY_DIRECTORY, type EntityDirectory, type JsonMap } from '../../policy/index.ts';
import { phaseBadge, problemOf } from '../facts.ts';
import { type Html, html, safeHref } from '../html.ts';
import { notice, table } from '../layout.ts';
import { directoryUrl } from '../paths.ts';
import type { ConsoleRoute, PageAnswer, PageRequest } from '../routes.ts';
import { listViewed, type Viewed } from '../view.ts';

/** Entities rendered at once: the rest is counted, and the search narrows it. */
export const SHOWN_AT_MOST = 200;
/** A property value's JSON longer than this is cut (the Directory object has it whole). */
const VALUE_CHARS = 300;
/** The longest query kept. */
const MAX_QUERY = 256;

export interface DirectorySearch {
  /** Text looked for (case-insensitive) in type, id and property values; '' matches all. */
  readonly q: string;
  /** One entity type; '' for every type. */
  readonly type: string;
}

export interface FoundEntity {
  readonly type: string;
  readonly id: string;
  readonly properties: JsonMap;
}

export interface SearchResult {
  /** Entities that match, in type then id order (code points), the first `limit` of them. */
  readonly shown: readonly FoundEntity[];
  /** Every entity that matches. */
  readonly matches: number;
}

function valueText(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
}

function matchesText(type: string, id: string, props: JsonMap, needle: string): boolean {
  if (type.toLowerCase().includes(needle) || id.toLowerCase().includes(needle)) return true;
  for (const v of Object.values(props)) if (valueText(v).toLowerCase().includes(needle)) return true;
  return false;
}

/** The entities of `directory` that a search finds: the first `limit`, and how many in all. */
export function searchEntities(directory: EntityDirectory, search: DirectorySearch, limit = SHOWN_AT_MOST): SearchResult {
  const types = search.type === '' ? directory.types() : directory.types().filter((t) => t === search.type);
  const needle = search.q.toLowerCase();
  const shown: FoundEntity[] = [];
  let matches = 0;
  for (const type of types) {
    const ids = directory.ids(type);
    if (needle === '') {
      // Nothing to read: count them, and take the first ones.
      for (let i = 0; i < ids.length && shown.length < limit; i++) {
        const id = ids[i] as string;
        shown.push({ type, id, properties: directory.get(type, id) ?? {} });
      }
      matches += ids.length;
      continue;
    }
    for (const id of ids) {
      const properties = directory.get(type, id) ?? {};
      if (!matchesText(type, id, properties, needle)) continue;
      matches++;
      if (shown.length < limit) shown.push({ type, id, properties });
    }
  }
  return { shown, matches };
}

/** Everything the directory page shows, gathered at one instant. */
export interface DirectoryView {
  readonly tenant: string;
  /** The tenant's Directory objects, by name. */
  readonly directories: readonly Viewed<'Directory'>[];
  /** The entities in effect. */
  readonly directory: EntityDirectory;
  /** Names of the Directories listing an entity, sorted; the first one's properties are in effect. */
  readonly listedBy: (type: string, id: string) => readonly string[];
  readonly search: DirectorySearch;
}

/** The search a query asks for (`q`, `type`), trimmed and bounded. */
export function parseDirectorySearch(query: URLSearchParams): DirectorySearch {
  return { q: (query.get('q') ?? '').trim().slice(0, MAX_QUERY), type: (query.get('type') ?? '').trim().slice(0, MAX_QUERY) };
}

const anchorOf = (name: string): string => `directory-${name}`;

function directoriesTable(v: DirectoryView): Html {
  const rows = v.directories.map((d) => {
    const problem = problemOf(d.status.conditions);
    return html`<tr id="${anchorOf(d.name)}">
      <th scope="row">${d.name}</th>
      <td>${phaseBadge(d.status.phase)}</td>
      <td class="num">${d.status.entityCount ?? ''}</td>
      <td class="num">${d.spec?.entities.length ?? ''}</td>
      <td>${d.spec?.description ?? ''}</td>
      <td>${problem ? html`${problem.reason ?? ''}: ${problem.message ?? ''}` : ''}</td>
    </tr>`;
  });
  return table(
    'Directories',
    ['Directory', 'Phase', 'In effect', 'Listed', 'Description', 'Problem'],
    rows,
    'This tenant has no Directory: decisions read only what requests send.',
  );
}

function propertiesList(props: JsonMap): Html {
  const keys = Object.keys(props).sort();
  if (keys.length === 0) return html`<span class="muted">none</span>`;
  return html`${keys.map((k) => {
    const json = JSON.stringify(props[k]) ?? 'null';
    const text = json.length > VALUE_CHARS ? `${json.slice(0, VALUE_CHARS)}…` : json;
    return html`<div><code>${k}</code> = <code>${text}</code></div>`;
  })}`;
}

function listedByCell(names: readonly string[]): Html {
  return html`${names.map((n, i) => {
    const href = safeHref(`#${encodeURIComponent(anchorOf(n))}`);
    const label = href ? html`<a href="${href}">${n}</a>` : html`${n}`;
    return html`${i > 0 ? ', ' : ''}${label}${i === 0 && names.length > 1 ? html` <span class="muted">(in effect)</span>` : ''}`;
  })}`;
}

function searchForm(v: DirectoryView): Html {
  const types = [...v.directory.types()];
  if (v.search.type !== '' && !types.includes(v.search.type)) types.push(v.search.type);
  const option = (value: string, label: string) =>
    html`<option value="${value}"${value === v.search.type && html` selected`}>${label}</option>`;
  return html`<form method="get" action="${directoryUrl(v.tenant)}" class="filters" role="search" aria-label="Search the directory">
    <div><label for="d-q">Search type, id and property values</label>
      <input id="d-q" type="search" name="q" value="${v.search.q}" maxlength="256" autocomplete="off" /></div>
    <div><label for="d-type">Type</label>
      <select id="d-type" name="type">${option('', 'All types')}${types.map((t) => option(t, t))}</select></div>
    <div><button type="submit">Search</button> <a href="${directoryUrl(v.tenant)}">Clear</a></div>
  </form>`;
}

function entitiesSection(v: DirectoryView): Html {
  const found = searchEntities(v.directory, v.search);
  const total = v.directory.size;
  const searching = v.search.q !== '' || v.search.type !== '';
  const count =
    found.matches > found.shown.length
      ? `Showing the first ${found.shown.length} of ${found.matches} ${searching ? 'matching entities' : 'entities'}: search to narrow them.`
      : `${found.matches} of ${total} entities${searching ? ' match' : ''}.`;
  const rows = found.shown.map(
    (e) => html`<tr>
      <td><code>${e.type}</code></td><td><code>${e.id}</code></td>
      <td>${propertiesList(e.properties)}</td><td>${listedByCell(v.listedBy(e.type, e.id))}</td>
    </tr>`,
  );
  const unknownType =
    v.search.type !== '' && v.directory.ids(v.search.type).length === 0
      ? notice('warn', `No entity of type ${v.search.type} is in effect.`)
      : '';
  return html`${unknownType}<p class="muted" id="directory-count">${count}</p>
    ${table(
      'Entities in effect',
      ['Type', 'Id', 'Properties', 'Listed by'],
      rows,
      total === 0 ? 'No entity is in effect.' : 'No entity matches the search.',
    )}`;
}

/** The directory page's body. Pure: the same view gives the same HTML. */
export function renderDirectory(v: DirectoryView): Html {
  return html`<h1>Directory <span class="muted">of ${v.tenant}</span></h1>
    <h2>Directories</h2>
    <div id="directory-list" data-live>${directoriesTable(v)}</div>
    <h2>Entities in effect</h2>
    ${searchForm(v)}
    <div id="directory-entities" data-live>${entitiesSection(v)}</div>`;
}

function directoryPage(req: PageRequest): PageAnswer {
  const tenant = req.tenant as string;
  const view: DirectoryView = {
    tenant,
    directories: listViewed(req.deps.objects, 'Directory', tenant),
    directory: req.snapshot.tenants.get(tenant)?.directory ?? EMPTY_DIRECTORY,
    listedBy: (type, id) => req.deps.store.draft.listedBy(tenant, type, id),
    search: parseDirectorySearch(req.query),
  };
  return { kind: 'page', title: `Directory of ${tenant}`, body: renderDirectory(view), nav: 'directory' };
}

export const DIRECTORY_ROUTES: readonly ConsoleRoute[] = [{ method: 'GET', path: '/t/:tenant/directory', handle: directoryPage }];
