// Test files are read by the yaml package, as the manifests are (standalone/objects.ts), and mean what
// it reads in them: the same values, every case at its line, and an error wherever it reports one.
// Checked on hand-picked texts, against the manifests' reader itself, on the examples, generated YAML
// in many styles, and those texts mutated at random (where most of what comes out is broken or unusual
// YAML).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { API_VERSION } from '../../src/api/index.ts';
import { readSource } from '../../src/policytest/source.ts';
import type { Offline } from '../../src/pipeline/index.ts';
import { readObjects } from '../../src/standalone/index.ts';
import { offlineOf, ROOT, runText } from './support.ts';
import { rng } from '../support/corpus.ts';

/** What the yaml package reads, with each case's line (when cases is a sequence, not an alias); undefined when it reports an error. */
function yamlRead(text: string): { value: unknown; caseLines: number[] | undefined } | undefined {
  const lines = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, lineCounter: lines, logLevel: 'error' });
  if (doc.errors.length > 0) return undefined;
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch {
    return undefined;
  }
  const cases = doc.get('cases', true) as Node | undefined;
  const caseLines = isSeq(cases) ? cases.items.map((item) => lines.linePos((item as Node).range?.[0] ?? 0).line) : undefined;
  return { value, caseLines };
}

/** What readSource reads: the value and each case's line, or its errors as `line:column: message`. */
function ourRead(text: string): { value: unknown; caseLines: number[] } | string[] {
  const source = readSource('t.test.yaml', text);
  if (Array.isArray(source)) return source.map((e) => `${e.line}:${e.column}: ${e.message}`);
  const cases = (source.value as { cases?: unknown } | null)?.cases;
  const caseLines = Array.isArray(cases) ? cases.map((_, i) => source.position(['cases', i]).line) : [];
  return { value: source.value, caseLines };
}

/** Fails when readSource reads a text otherwise than the yaml package, or accepts one it refuses. */
function agreement(text: string): 'read' | 'refused' {
  const ours = ourRead(text);
  // The yaml package refuses a plain scalar under a key after a comment at column 0, followed by a key
  // (`d:\n#c\n  0\ny: 1`, "Implicit keys need to be on a single line"), which YAML reads.
  const theirs = yamlRead(text) ?? yamlRead(text.replace(/^#.*$/gm, ''));
  if (Array.isArray(ours)) {
    expect(ours.length, `no error for a refused text:\n${text}`).toBeGreaterThan(0);
    return 'refused';
  }
  // A text that is not a mapping is an error of its own (resolveCases: "this file holds the text ...").
  if (ours.value === null || typeof ours.value !== 'object' || Array.isArray(ours.value)) return 'refused';
  expect(theirs, `read a text the yaml package refuses: ${JSON.stringify(text)}`).toBeDefined();
  expect(ours.value, `read differently: ${JSON.stringify(text)}`).toEqual(theirs?.value);
  if (theirs?.caseLines !== undefined) expect(ours.caseLines, `cases at other lines:\n${text}`).toEqual(theirs.caseLines);
  return 'read';
}

const WORDS = [
  'alice',
  'read',
  'team blue',
  'doc-1',
  'a:b',
  'x, y',
  'it is',
  'null',
  'True',
  '~',
  '12',
  '-3',
  '0.5',
  '1.50',
  '10.20.0.1',
  'é ü ✓',
];
const TRICKY = [
  ...['#x', 'a #b', 'a#b', "it's", 'say "hi"', '', ' lead', 'trail ', '[x]', '{y}', '- z', ': q', '&a', '*b', '!t', '|', '>'],
  ...['@x', '%p', '?', '0x1F', '.inf', '-.Inf', '.NaN', '007', '+5', '1e3', '1e400', '0o17', '0o8', 'yes', 'on', 'off', 'y'],
  ...['2026-11-24', '2026-11-24T10:00:00Z', '1_000', '0b101', '1:20', '<<', '=', '12345678901234567890', '-0', '.5', '1.'],
];
const KEYS = ['name', 'cases', 'subject', 'id', 'type', 'properties', 'team', 'a b', 'k-1', 'x.y', '"quoted key"', "'single'"];
const TRICKY_KEYS = ['1', 'true', 'null', '~', '0x10', 'a:b', 'a,b', '-k', '? k', '"a"b', '<<', '__proto__', 'yes', '2026-11-24'];

/** Texts of random shape; `tricky` is how often a scalar or key is one that YAML reads in an unusual way. */
function generator(seed: number, tricky: number) {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const key = (): string => (r() < tricky ? pick(TRICKY_KEYS) : pick(KEYS));
  const scalarText = (): string => {
    const roll = r();
    const raw = roll < tricky ? pick(TRICKY) : roll < 0.8 ? pick(WORDS) : String(Math.floor(r() * 2000) - 1000);
    const style = r();
    if (style < 0.6) return raw;
    if (style < 0.8) return JSON.stringify(raw);
    return `'${raw.replaceAll("'", "''")}'`;
  };
  const sp = (): string => (r() < 0.7 ? '' : ' ');
  const flow = (depth: number): string => {
    if (depth > 2 || r() < 0.45) return scalarText();
    const n = Math.floor(r() * 4);
    if (r() < 0.5) return `[${sp()}${Array.from({ length: n }, () => flow(depth + 1)).join(`,${r() < 0.8 ? ' ' : ''}`)}${sp()}]`;
    const keys = [...new Set(Array.from({ length: n }, key))];
    return `{${sp()}${keys.map((k) => `${k}: ${flow(depth + 1)}`).join(', ')}${sp()}}`;
  };
  const anchor = (): string => (r() < tricky / 3 ? `&a${Math.floor(r() * 3)} ` : '');
  const comment = (): string => (r() < 0.15 ? `${r() < 0.5 ? ' ' : '  '}# note: ${pick(WORDS)}` : '');
  const lines: string[] = [];
  const extra = (indent: string): void => {
    if (r() < 0.08) lines.push('');
    if (r() < 0.05) lines.push(`${r() < 0.5 ? indent : ''}# a comment line`);
  };
  const value = (): string => {
    const roll = r();
    if (roll < tricky / 4) return `*a${Math.floor(r() * 3)}`;
    return `${anchor()}${roll < 0.7 ? scalarText() : flow(0)}`;
  };
  const block = (indent: string, depth: number, kind: 'map' | 'seq'): void => {
    const n = 1 + Math.floor(r() * 4);
    const keys = [...new Set(Array.from({ length: n }, key))];
    for (const key of kind === 'map' ? keys : Array.from({ length: n }, () => '-')) {
      extra(indent);
      const head = kind === 'map' ? `${indent}${key}:` : `${indent}-`;
      const roll = r();
      if (depth < 3 && roll < 0.3) {
        const child = r() < 0.5 ? 'map' : 'seq';
        lines.push(`${head}${comment()}`);
        block(child === 'seq' && kind === 'map' && r() < 0.3 ? indent : `${indent}  `, depth + 1, child);
      } else if (depth < 3 && kind === 'seq' && roll < 0.45) {
        // A compact mapping in a sequence item: `- key: value` and its other keys below.
        const inner = `${indent}  `;
        const first = lines.length;
        block(inner, depth + 1, 'map');
        lines[first] = `${indent}- ${(lines[first] ?? '').trimStart()}`;
      } else lines.push(`${head} ${value()}${comment()}`);
    }
  };
  return (): string => {
    lines.length = 0;
    if (r() < 0.1) lines.push('---');
    block('', 0, 'map');
    return `${lines.join('\n')}${r() < 0.9 ? '\n' : ''}`;
  };
}

let offline: Offline;
beforeAll(async () => {
  offline = await offlineOf(join(ROOT, 'examples'));
});

describe('reading a test file', () => {
  it('reports each case at its line, in the compact style and the block style', async () => {
    const request = 'subject: {type: user, id: u}, action: read, resource: {type: document, id: d}, expect: deny';
    const text = [
      '# cases for acme', //                                                            1
      'tenant: acme',
      'cases:',
      `  - {name: compact, ${request}}`, //                                             4
      '',
      '  - name: block', //                                                             6
      '    subject: {type: user, id: u}',
      '    action: read',
      '    resource: {type: document, id: d}',
      '    expect: deny',
      '  -', //                                                                        11
      '    # the case starts on the next line',
      '    name: below', //                                                            13
      '    subject: {type: user, id: u}',
      '    action: read',
      '    resource: {type: document, id: d}',
      '    expect: deny',
      `  - &shared {name: anchored, ${request}}`, //                                   18
      `  - !!map {name: tagged, ${request}}`, //                                       19
      '',
    ].join('\n');
    const outcome = await runText(offline, text);
    if (!outcome.ok) throw new Error(JSON.stringify(outcome));
    expect(outcome.report.results.map((r) => [r.case.name, r.case.line, r.case.column])).toEqual([
      ['compact', 4, 5],
      ['block', 6, 5],
      ['below', 13, 5],
      ['anchored', 18, 13],
      ['tagged', 19, 11],
    ]);
    expect(yamlRead(text)?.caseLines).toEqual([4, 6, 13, 18, 19]);
  });

  it('reads the values YAML readers disagree on as the manifests are read (YAML 1.2, core schema)', () => {
    const source = readSource(
      't.test.yaml',
      [
        'cases: []',
        'words: [on, off, yes, no, y, n, True, FALSE, Null, ~, null]',
        'numbers: [0o17, 017, 0x1F, 1e3, .5, +12, -0, 1_000, 0b101, 1:20, 12345678901234567890, 1e400, -1e400, .inf, .NaN]',
        'dates: [2026-11-24, 2026-11-24T10:00:00Z]',
        'keys: {1: b, true: c, 0x10: d, <<: e, 2026-11-24: f, "null": g}',
        'quoted: ["0o17", \'yes\', "\\x41\\u00e9"]',
        'text: !!str 12',
      ].join('\n'),
    );
    expect(Array.isArray(source) ? source : source.value).toEqual({
      cases: [],
      words: ['on', 'off', 'yes', 'no', 'y', 'n', true, false, null, null, null],
      numbers: [15, 17, 31, 1000, 0.5, 12, -0, '1_000', '0b101', '1:20', 12345678901234567000, Infinity, -Infinity, Infinity, NaN],
      dates: ['2026-11-24', '2026-11-24T10:00:00Z'],
      keys: { '1': 'b', true: 'c', '16': 'd', '<<': 'e', '2026-11-24': 'f', null: 'g' },
      quoted: ['0o17', 'yes', 'Aé'],
      text: '12',
    });
  });

  it('reads a test file exactly as the manifests are read, where YAML readers differ', () => {
    // Each text with the envelope of a manifest of ours after it, read by the manifests' own reader.
    const envelope = `apiVersion: ${API_VERSION}\nkind: Directory\nmetadata: {name: t, namespace: acme}\n`;
    const texts = [
      // YAML 1.1's booleans are text in YAML 1.2; numbers as the yaml package makes them.
      'cases: []\nwords: [yes, no, on, off, y, n, True, ~]\n',
      'cases: []\nnumbers: [12345678901234567890, 1e400, -1e400, 0o17, 017, 0x1F, 1_000, .5]\n',
      // A key written null, ~ or not at all is "", a list as a key is its text.
      'cases: []\nnull: a\nentities: {~: {id: x}}\n',
      'cases: []\n: x\n',
      'cases: []\n? [a, b]\n: x\n',
      // A YAML 1.1 document is read with YAML 1.1's schema.
      '%YAML 1.1\n---\ncases: []\nx: [yes, 0o17]\n',
      'cases: []\nx: &a {k: v}\ny: *a\n',
    ];
    for (const text of texts) {
      const read = readSource('t.test.yaml', text);
      const manifest = readObjects(`${text}${envelope}`, 'm.yaml');
      expect(manifest.problems, text).toEqual([]);
      const { apiVersion: _a, kind: _k, metadata: _m, ...content } = manifest.objects[0]?.raw ?? {};
      expect(Array.isArray(read) ? read : read.value, text).toEqual(content);
    }
    // A key twice: refused by both, in the same words.
    const twice = 'cases: []\nx: 1\nx: 2\n';
    expect(ourRead(twice)).toEqual(['3:1: invalid YAML: Map keys must be unique']);
    const problems = readObjects(`${twice}${envelope}`, 'm.yaml').problems.map((p) => p.message);
    expect(problems).toEqual([expect.stringMatching(/^invalid YAML: Map keys must be unique at line 3, column 1/)]);
  });

  it("refuses, at its line and column, what the yaml package refuses, and tags outside YAML 1.2's core schema", () => {
    const bomb = [
      'l0: &a0 [x, x, x, x, x, x, x, x, x, x]',
      ...Array.from({ length: 8 }, (_, i) => `l${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(', ')}]`),
    ];
    const refused: readonly (readonly [string, string])[] = [
      // What the yaml package refuses, in its words.
      ['cases: []\ne: {t: &x[1]}\n', '2:10: invalid YAML: Tags and anchors must be separated from the next token by white space'],
      ['cases: []\na: &x b: c\n', '2:4: invalid YAML: Nested mappings are not allowed in compact mappings'],
      ['cases:\n- {name: c}\n- "d"e: 1\n', '3:6: invalid YAML: Unexpected scalar token'],
      [' ---\ncases: []\n', '1:2: invalid YAML: Implicit keys need to be on a single line'],
      ['cases: []\ne:\n\t', '3:1: invalid YAML: Tabs are not allowed as indentation'],
      // Tags: YAML 1.1's (a manifest reads a Date, bytes, a Set: nothing a JSON request holds) and a core
      // tag on a value it does not fit (a manifest reads the text "1", with a warning).
      ['cases: []\nwhen: !!timestamp 2026-11-24\n', '2:7: invalid YAML: Unresolved tag: tag:yaml.org,2002:timestamp'],
      ['cases: []\nx: !!set {a, b}\n', '2:4: invalid YAML: Unresolved tag: tag:yaml.org,2002:set'],
      ['cases: []\nx: !!float 1\n', "2:4: invalid YAML: Unresolved tag: tag:yaml.org,2002:float (a tag of YAML 1.2's core schema"],
      ['cases: []\nx: !!map\n', '2:4: invalid YAML: Unresolved tag: tag:yaml.org,2002:map'],
      // Aliases: the yaml package's bound, as for manifests, at the first alias; an alias before its anchor.
      [
        `cases: []\none: &one x\nmany: [${Array(101).fill('*one').join(', ')}]\n`,
        '3:8: invalid YAML: Excessive alias count indicates a resource exhaustion attack (at most 100 aliases of a node',
      ],
      [`cases: []\n${bomb.join('\n')}\n`, '3:10: invalid YAML: Excessive alias count indicates a resource exhaustion attack'],
      ['cases: [*nope]\n', '1:9: invalid YAML: Unresolved alias (the anchor must be set before the alias): nope'],
    ];
    for (const [text, error] of refused) {
      const ours = ourRead(text);
      expect(Array.isArray(ours) ? ours[0] : ours, JSON.stringify(text)).toEqual(expect.stringContaining(error));
    }
  });

  it('reads the example test files as the yaml package does', () => {
    const dir = join(ROOT, 'examples');
    const files = readdirSync(dir).filter((f) => /\.test\.ya?ml$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(agreement(readFileSync(join(dir, f), 'utf8')), f).toBe('read');
  });

  it('reads generated YAML of plain content exactly as the yaml package does', () => {
    const next = generator(20261124, 0);
    for (let i = 0; i < 1500; i++) expect(agreement(next())).toBe('read');
  });

  it('reads generated YAML with unusual scalars, keys and anchors exactly as the yaml package does', () => {
    const next = generator(99, 0.3);
    let read = 0;
    for (let i = 0; i < 2000; i++) if (agreement(next()) === 'read') read++;
    expect(read).toBeGreaterThan(500);
  });

  it('never reads a mutated text otherwise than the yaml package, nor accepts one it refuses', () => {
    const next = generator(777, 0.1);
    const r = rng(4242);
    const chars = [
      ':',
      ' ',
      '-',
      '#',
      '{',
      '}',
      '[',
      ']',
      ',',
      "'",
      '"',
      '\n',
      '\n  ',
      '&',
      '*',
      '!',
      '|',
      '>',
      '?',
      'x',
      '1',
      '.',
      '\\',
      '%',
      '\t',
    ];
    let read = 0;
    for (let i = 0; i < 5000; i++) {
      let text = next();
      for (let edits = 1 + Math.floor(r() * 3); edits > 0; edits--) {
        const at = Math.floor(r() * (text.length + 1));
        const roll = r();
        if (roll < 0.4) text = text.slice(0, at) + text.slice(at + 1);
        else if (roll < 0.8) text = text.slice(0, at) + (chars[Math.floor(r() * chars.length)] as string) + text.slice(at);
        else text = `${text.slice(0, at)} ${text.slice(at)}`;
      }
      if (agreement(text) === 'read') read++;
    }
    expect(read).toBeGreaterThan(500);
  });
});
