// The report's formats with hostile strings from the log in every place a log can put one (types,
// actions, inputs, where, details): the JUnit XML still validates and parses back to the same text,
// the Markdown's tables keep their shape with each cell reading as the text it shows, no HTML gets
// through, and the terminal sees no control character.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { marked, type Token, type Tokens } from 'marked';
import { beforeAll, describe, expect, it } from 'vitest';
import type { World } from '../../src/policytest/index.ts';
import { FORMATS, summaryLine } from '../../src/replay/formats.ts';
import { createReplayer } from '../../src/replay/replay.ts';
import { createReportBuilder } from '../../src/replay/report.ts';
import { CAUSES, type Recorded, type ReplayReport } from '../../src/replay/types.ts';
import { safe } from '../../src/replay/words.ts';
import { candidateWorld, recorded } from './world.ts';

let world: World;
beforeAll(async () => {
  world = await candidateWorld();
});

/** What a hostile client may put in a type or an action: table breakers, HTML, fences, a mention, controls. */
const HOSTILE =
  'x | y\n| --- |\r\n<script>alert(1)</script><img src=x onerror=alert(2)> ```` `tick` **b** [l](javascript:alert(3)) @org/team </details> \u001b[31mred\u202e';
const red = { type: 'user', id: 'u-red', team: 'red' };

function hostileReport(allowDirection?: 'deny-to-allow'): ReplayReport {
  const builder = createReportBuilder({ manifests: 'candidate', sources: ['decisions.log', HOSTILE], maxFlips: 0, allowDirection });
  const replay = createReplayer(world);
  const records: Recorded[] = [
    recorded({
      where: 'l:1',
      decision: 'allow',
      rule: 'team-documents',
      principal: red,
      action: 'read',
      resource: { type: 'document', id: HOSTILE, team: 'blue' },
    }),
    // A type the candidate has no rule for: the recorded allow becomes a deny, grouped under hostile types.
    recorded({
      where: 'l:2',
      decision: 'allow',
      rule: 'team-documents',
      principal: { type: HOSTILE, id: 'h' },
      action: HOSTILE,
      resource: { type: HOSTILE, id: 'h' },
    }),
    recorded({
      where: 'l:3',
      decision: 'deny',
      principal: { ...red, roles: ['admin'] },
      action: 'delete',
      resource: { type: 'document', id: 'd' },
    }),
  ];
  for (const rec of records) {
    builder.line();
    const r = replay(rec);
    if ('ok' in r) builder.unreplayable(r);
    else builder.replayed(r);
  }
  builder.line();
  builder.unreplayable({ ok: false, cause: 'not-ours', where: `${HOSTILE}:4`, detail: `a field ${HOSTILE}` });
  builder.opa({
    version: '1.1.0',
    decided: 3,
    counts: { replayed: 3, unchanged: 1, allowToDeny: 1, denyToAllow: 1 },
    disagreements: 1,
    disagreementExamples: [{ where: 'l:1', time: 't', input: { id: HOSTILE }, bundle: 'acme/all', opa: 'allow', native: 'deny' }],
  });
  return builder.build();
}

const XML = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  htmlEntities: true,
  isArray: (name) => ['testsuite', 'testcase'].includes(name),
});

interface JunitCase {
  name: string;
  failure?: { message: string; '#text'?: string };
  skipped?: { message: string };
  'system-out'?: string;
}

describe('JUnit', () => {
  it('validates, and every hostile string parses back exactly (XML cannot hold controls: they become U+FFFD)', () => {
    const text = FORMATS.junit(hostileReport());
    expect(XMLValidator.validate(text)).toBe(true);
    const doc = XML.parse(text) as {
      testsuites: { tests: string; failures: string; skipped: string; testsuite: { name: string; testcase: JunitCase[] }[] };
    };
    const suites = doc.testsuites.testsuite;
    expect(suites.map((s) => s.name)).toEqual(['acme', 'not replayable', 'OPA 1.1.0']);
    const acme = suites[0]?.testcase ?? [];
    expect(acme.map((c) => c.name)).toEqual([
      'unchanged: 0 of 3 decisions',
      'allow → deny: user read document (rule team-documents → none)',
      `allow → deny: ${HOSTILE} ${HOSTILE} ${HOSTILE} (rule team-documents → none)`.replaceAll('\u001b', '\ufffd'),
      'deny → allow: user delete document (rule none → admins)',
    ]);
    expect(acme.filter((c) => c.failure).length).toBe(3);
    expect(acme[1]?.failure?.['#text']).toContain(JSON.stringify(HOSTILE).replaceAll('\\u001b', '\\u001b'));
    const cause = suites[1]?.testcase[0];
    expect(cause?.skipped?.message).toBe('1 line not replayable (not-ours)');
    expect(cause?.['system-out']).toBe(`${HOSTILE}:4  a field ${HOSTILE}`.replaceAll('\u001b', '\ufffd').replaceAll('\r\n', '\n'));
    expect(doc.testsuites).toMatchObject({ tests: '6', failures: '4', skipped: '1' });
  });
});

describe('JUnit with --allow-direction deny-to-allow', () => {
  it('passes the deny → allow groups, with a note saying they were allowed, and fails the others', () => {
    const doc = XML.parse(FORMATS.junit(hostileReport('deny-to-allow'))) as { testsuites: { testsuite: { testcase: JunitCase[] }[] } };
    const acme = doc.testsuites.testsuite[0]?.testcase ?? [];
    const denyToAllow = acme.find((c) => c.name.startsWith('deny → allow'));
    expect(denyToAllow?.failure).toBeUndefined();
    expect(denyToAllow?.['system-out']).toMatch(/^1 decision would flip deny → allow \(allowed by --allow-direction deny-to-allow\)/);
    expect(acme.filter((c) => c.failure).map((c) => c.name.slice(0, 12))).toEqual(['allow → deny', 'allow → deny']);
  });
});

/** A table's cells as the page shows them (inline tokens' text, entities decoded). */
function cells(table: Tokens.Table): string[][] {
  const text = (c: Tokens.TableCell): string => c.tokens.map((t) => ('text' in t ? String(t.text) : t.raw)).join('');
  return [table.header.map(text), ...table.rows.map((r) => r.map(text))];
}

function tables(md: string): Tokens.Table[] {
  return marked.lexer(md).filter((t: Token): t is Tokens.Table => t.type === 'table');
}

describe('Markdown', () => {
  it('keeps the tables’ shape and shows each hostile cell as its text, controls escaped', () => {
    const md = FORMATS.markdown(hostileReport());
    const [totals, flips, causes] = tables(md);
    expect(cells(totals as Tokens.Table)).toEqual([
      ['', 'Replayed', 'Unchanged', 'Allow → deny', 'Deny → allow'],
      ['All', '3', '0', '2', '1'],
      ['acme', '3', '0', '2', '1'],
    ]);
    const rows = cells(flips as Tokens.Table);
    expect(rows).toHaveLength(4);
    for (const row of rows) expect(row).toHaveLength(9);
    const hostileRow = rows.slice(1).find((r) => r[4] !== 'user');
    // A cell shows the start of a string from the log (its escaped text at most 120 characters), cut with …
    for (const shown of hostileRow?.slice(4, 7) ?? []) {
      expect(shown.endsWith('…')).toBe(true);
      expect(safe(HOSTILE).startsWith(shown.slice(0, -1))).toBe(true);
      expect(shown).toContain('x | y\\u000a| --- |\\u000d\\u000a<script>');
    }
    expect(hostileRow?.[0]).toBe('1');
    const causeRows = cells(causes as Tokens.Table);
    expect(causeRows).toHaveLength(2);
    expect(causeRows[1]?.[0]).toBe('not-ours');
  });

  it('lets no HTML through and closes every <details> it opens', () => {
    const md = FORMATS.markdown(hostileReport());
    const html = marked.parse(md, { async: false });
    expect(html).not.toMatch(/<script|<img|javascript:alert\(3\)"|<a /i);
    const lines = md.split('\n');
    expect(lines.filter((l) => l === '<details>')).toHaveLength(4);
    expect(lines.filter((l) => l === '</details>')).toHaveLength(4);
    // The hostile </details> stays inside code: the HTML has exactly as many as the Markdown wrote.
    expect(html.match(/<\/details>/g)?.length).toBe(4);
    expect(md).not.toContain('\u001b');
    expect(md).not.toContain('\u202e');
  });

  it('opens with the verdict', () => {
    expect(FORMATS.markdown(hostileReport()).split('\n')[0]).toBe(
      '### ❌ Replay FAILED: 3 flips counted, at most 0 allowed; OPA disagreed with the native replay on 1 decision',
    );
  });
});

describe('an empty replay (no line read)', () => {
  it('prints in every format: JUnit that validates, Markdown with its totals table, a passing gate', () => {
    const r = createReportBuilder({ manifests: 'candidate', sources: [], maxFlips: 0 }).build();
    expect(XMLValidator.validate(FORMATS.junit(r))).toBe(true);
    expect(cells(tables(FORMATS.markdown(r))[0] as Tokens.Table)).toEqual([
      ['', 'Replayed', 'Unchanged', 'Allow → deny', 'Deny → allow'],
      ['All', '0', '0', '0', '0'],
    ]);
    expect(FORMATS.text(r)).toContain('gate passed: 0 flips counted, at most 0 allowed');
    expect(JSON.parse(FORMATS.json(r))).toMatchObject({ lines: 0, groups: [], gate: { passed: true } });
  });
});

describe('Markdown size', () => {
  it('stays within a GitHub comment (65,536 characters) for 1,000 groups of long hostile types and inputs', () => {
    const builder = createReportBuilder({ manifests: 'candidate', sources: ['decisions.log'], maxFlips: 0 });
    const long = `${'|<`'.repeat(85)}x`;
    for (let i = 0; i < 1_000; i++) {
      const rec = recorded({
        decision: 'allow',
        principal: { type: long, id: 'p'.repeat(1_000) },
        action: `${long}${i}`,
        resource: { type: long, id: 'r'.repeat(1_000) },
      });
      for (let k = 0; k < 4; k++) builder.replayed({ record: rec, decision: 'deny', change: 'allow-to-deny' });
    }
    const md = FORMATS.markdown(builder.build());
    expect(md.length).toBeLessThan(65_536);
    expect(md).toContain('3,800 more flips in further groups: see the JSON report.');
    expect(md).toContain('and after: see the JSON report');
    const [, flips] = tables(md);
    expect(flips?.rows).toHaveLength(50);
  });

  it('stays within a GitHub comment for a log of 400 tenants with long names, every part of the report full', () => {
    const builder = createReportBuilder({ manifests: 'candidate', sources: ['decisions.log'], maxFlips: 0 });
    const name = (prefix: string, i: number): string => `${prefix}-${i}-${'n'.repeat(200)}`;
    for (let t = 0; t < 400; t++) {
      for (const bundle of [undefined, name('bundle', t), name('other', t)]) {
        const rec = recorded({
          tenant: `tenant-${String(t).padStart(3, '0')}-production-eu-west`,
          ...(bundle === undefined ? {} : { source: 'opa' as const, bundle }),
          decision: 'allow',
          rule: name('rule', t),
          principal: { type: 'employee', id: 'e'.repeat(1_000) },
          action: 'read',
          resource: { type: 'document', id: 'd'.repeat(1_000) },
        });
        builder.replayed({ record: rec, decision: t % 2 === 0 ? 'deny' : 'allow', change: t % 2 === 0 ? 'allow-to-deny' : 'unchanged' });
      }
    }
    for (let k = 0; k < 3; k++)
      builder.unreplayable({ ok: false, cause: 'not-json', where: `decisions.log:${k}`, detail: HOSTILE.repeat(20) });
    const md = FORMATS.markdown(builder.build());
    expect(md.length).toBeLessThan(65_536);
    const [counts, flips] = tables(md);
    // All, the 30 tenants and bundles with the most flips, and one row summing the other 1,170.
    expect(counts?.rows).toHaveLength(32);
    expect(cells(counts as Tokens.Table).at(-1)).toEqual([
      '1,170 more tenants and bundles (see the JSON report)',
      '1,170',
      '600',
      '570',
      '0',
    ]);
    expect(flips?.rows.length).toBeGreaterThan(0);
    expect(md).toContain('more flips in further groups: see the JSON report.');
  });
});

describe('Markdown size for a fleet', () => {
  it('stays within a GitHub comment for 1,200 tenants and bundles, every cause and OPA disagreements, with flipped targets listed first', () => {
    const builder = createReportBuilder({ manifests: 'candidate', sources: ['decisions.log'], maxFlips: 0 });
    const long = `${'|<`'.repeat(85)}x`;
    const input = { principal: { type: 'user', id: 'p'.repeat(3_000) }, action: 'read', resource: { type: 'document', id: 'd' } };
    for (let i = 0; i < 400; i++) {
      const tenant = `tenant-${String(i).padStart(3, '0')}-payments-platform-${'x'.repeat(30)}`;
      for (const bundle of [undefined, 'gateway-documents', 'batch-jobs-of-the-nightly-settlement-run']) {
        const rec = { ...recorded({ decision: 'allow', principal: input.principal, action: 'read', resource: input.resource }), tenant };
        builder.line();
        builder.replayed({
          record: bundle === undefined ? rec : { ...rec, source: 'opa', bundle },
          decision: 'allow',
          change: 'unchanged',
        });
      }
    }
    for (let i = 0; i < 100; i++) {
      const rec = recorded({
        decision: 'allow',
        principal: { type: long, id: 'h' },
        action: `${long}${i}`,
        resource: { type: long, id: 'h' },
      });
      builder.replayed({ record: { ...rec, tenant: 'acme' }, decision: 'deny', change: 'allow-to-deny' });
    }
    for (const cause of CAUSES)
      for (let k = 0; k < 3; k++)
        builder.unreplayable({ ok: false, cause, where: `${'/very/long/path'.repeat(20)}:${k}`, detail: long.repeat(3) });
    const example = {
      where: 'l:1',
      time: '2026-11-28T10:00:00Z',
      input: 'i'.repeat(2_000),
      bundle: 'acme/all',
      opa: 'allow' as const,
      native: 'deny' as const,
    };
    builder.opa({
      version: '1.1.0',
      decided: 1,
      counts: { replayed: 1, unchanged: 0, allowToDeny: 0, denyToAllow: 1 },
      disagreements: 3,
      disagreementExamples: [example, example, example],
    });
    const md = FORMATS.markdown(builder.build());
    expect(md.length).toBeLessThan(65_536);
    const totals = cells(tables(md)[0] as Tokens.Table);
    // The header, All, acme (its flips first), 29 more, and one row summing the other 1,171.
    expect(totals).toHaveLength(33);
    expect(totals[2]?.[0]).toBe('acme');
    expect(totals.at(-1)).toEqual(['1,171 more tenants and bundles (see the JSON report)', '1,171', '1,171', '0', '0']);
    expect(md).toContain('#### Not replayable');
    expect(md).toContain('OPA 1.1.0 decided');
  });
});

describe('text and JSON', () => {
  it('prints no control character to a terminal, and says the gate’s verdict', () => {
    const text = FORMATS.text(hostileReport());
    expect(text.replaceAll('\n', '')).not.toMatch(/[\p{Cc}\u202e]/u);
    expect(text).toContain('gate FAILED: 3 flips counted, at most 0 allowed; OPA disagreed with the native replay on 1 decision');
    expect(summaryLine(hostileReport())).toBe(
      'replay: 4 lines, 3 replayed: 0 unchanged, 2 allow → deny, 1 deny → allow, 1 not replayable; OPA 1.1.0: 1 disagreement; gate FAILED: 3 flips counted, at most 0 allowed; OPA disagreed with the native replay on 1 decision',
    );
  });

  it('prints the report object itself as JSON', () => {
    const r = hostileReport();
    expect(JSON.parse(FORMATS.json(r))).toEqual(JSON.parse(JSON.stringify(r)));
  });
});
