import { describe, expect, it } from 'vitest';
import { buildDirectory, EMPTY_DIRECTORY } from '../../policy/index.ts';
import { renderHtml } from '../html.ts';
import { viewed } from '../view.ts';
import { type DirectoryView, parseDirectorySearch, renderDirectory, searchEntities, SHOWN_AT_MOST } from './directory.ts';

const SMALL = buildDirectory([
  { type: 'user', id: 'alice', properties: { team: 'blue', level: 3 } },
  { type: 'user', id: 'bob', properties: { team: 'Red', manager: { id: 'alice' } } },
  { type: 'document', id: 'd1', properties: { owner: 'bob', long: 'x'.repeat(1000) } },
]);

/** 5,000 users over two Directories' worth of ids, a tenth of them on team "ops". */
const LARGE = buildDirectory(
  Array.from({ length: 5000 }, (_, i) => ({
    type: i % 2 === 0 ? 'user' : 'service',
    id: `e${String(i).padStart(5, '0')}`,
    properties: { team: i % 10 === 0 ? 'ops' : 'dev', n: i },
  })),
);

const search = (query: string) => parseDirectorySearch(new URLSearchParams(query));

function view(over: Partial<DirectoryView> = {}): DirectoryView {
  return {
    tenant: 'acme',
    directories: [],
    directory: SMALL,
    listedBy: () => ['people'],
    search: search(''),
    ...over,
  };
}

const render = (v: DirectoryView): string => renderHtml(renderDirectory(v));

describe('directory search', () => {
  it('finds text in any case in a type, an id, a string value, or the JSON of another value', () => {
    const ids = (q: string) => searchEntities(SMALL, search(`q=${encodeURIComponent(q)}`)).shown.map((e) => e.id);
    expect(ids('DOCUMENT')).toEqual(['d1']);
    expect(ids('ali')).toEqual(['alice', 'bob']);
    expect(ids('red')).toEqual(['bob']);
    expect(ids('3')).toEqual(['alice']);
    expect(ids('"id":"alice"')).toEqual(['bob']);
    expect(ids('nobody')).toEqual([]);
  });

  it('reads property values, not property names', () => {
    expect(searchEntities(SMALL, search('q=owner')).matches).toBe(0);
  });

  it('narrows by type, and finds nothing of a type the directory does not have', () => {
    expect(searchEntities(SMALL, search('type=user')).shown.map((e) => e.id)).toEqual(['alice', 'bob']);
    expect(searchEntities(SMALL, search('type=user&q=blue')).shown.map((e) => e.id)).toEqual(['alice']);
    expect(searchEntities(SMALL, search('type=robot'))).toEqual({ shown: [], matches: 0 });
  });

  it(`shows the first ${SHOWN_AT_MOST} of 5,000 entities in type then id order, and counts every match`, () => {
    const all = searchEntities(LARGE, search(''));
    expect(all.matches).toBe(5000);
    expect(all.shown).toHaveLength(SHOWN_AT_MOST);
    expect(all.shown[0]).toMatchObject({ type: 'service', id: 'e00001' });
    const ops = searchEntities(LARGE, search('q=ops'));
    expect(ops.matches).toBe(500);
    expect(ops.shown).toHaveLength(SHOWN_AT_MOST);
    expect(searchEntities(LARGE, search('type=user&q=ops')).matches).toBe(500);
    expect(searchEntities(LARGE, search('type=service&q=ops')).matches).toBe(0);
  });
});

describe('directory page', () => {
  it('is a pure function of its view: the same view gives the same HTML', () => {
    expect(render(view())).toBe(render(view()));
  });

  it('says it shows the first ones when more match than it shows', () => {
    expect(render(view({ directory: LARGE }))).toContain(`Showing the first ${SHOWN_AT_MOST} of 5000 entities: search to narrow them.`);
    expect(render(view({ directory: LARGE, search: search('q=ops') }))).toContain(
      `Showing the first ${SHOWN_AT_MOST} of 500 matching entities`,
    );
    expect(render(view({ search: search('q=blue') }))).toContain('1 of 3 entities match.');
  });

  it('shows properties as key = JSON value in key order, a long value cut', () => {
    const out = render(view({ search: search('type=user') }));
    expect(out).toContain('<div><code>manager</code> = <code>{&quot;id&quot;:&quot;alice&quot;}</code></div><div><code>team</code>');
    expect(out).toContain('<code>level</code> = <code>3</code>');
    const doc = render(view({ search: search('type=document') }));
    expect(doc).toContain(`<code>long</code> = <code>&quot;${'x'.repeat(299)}…</code>`);
  });

  it('keeps the search form outside the live region, with what was asked filled in', () => {
    const out = render(view({ search: search('q=%3Cb%3E&type=user') }));
    expect(out.indexOf('</form>')).toBeLessThan(out.indexOf('id="directory-entities" data-live'));
    expect(out).toContain('name="q" value="&lt;b&gt;"');
    expect(out).toContain('<option value="user" selected>user</option>');
  });

  it('lists a Directory with its problem, and says so when there are none or no entity is in effect', () => {
    const conflict = viewed('Directory', {
      kind: 'Directory',
      metadata: { name: 'extra', namespace: 'acme' },
      raw: {
        spec: { entities: [{ type: 'user', id: 'alice' }] },
        status: {
          phase: 'Conflict',
          entityCount: 0,
          conditions: [{ type: 'Ready', status: 'False', reason: 'DuplicateEntities', message: 'user "alice" (Directory people)' }],
        },
      },
    });
    const out = render(view({ directories: [conflict] }));
    expect(out).toMatch(/<tr id="directory-extra">[\s\S]*Conflict[\s\S]*<td class="num">0<\/td>\s*<td class="num">1<\/td>/);
    expect(out).toContain('DuplicateEntities: user &quot;alice&quot; (Directory people)');
    const empty = render(view({ directory: EMPTY_DIRECTORY }));
    expect(empty).toContain('This tenant has no Directory');
    expect(empty).toContain('No entity is in effect.');
  });
});
