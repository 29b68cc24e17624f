// The quick YAML reader must read every text it accepts exactly as the yaml package does, and leave
// everything else to it. Checked on hand-picked texts, on generated YAML in many styles, and on
// those texts mutated at random (where most of what comes out is broken or unusual YAML).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { quickRead } from '../../src/policytest/quickyaml.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** What the yaml package reads, or undefined when it reports an error. */
function yamlValue(text: string): { value: unknown } | undefined {
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return undefined;
  return { value: doc.toJS({ maxAliasCount: 100 }) };
}

/** Fails when quickRead accepts a text and reads it differently from the yaml package. */
function agreement(text: string): 'accepted' | 'left' {
  const quick = quickRead(text);
  if (quick === undefined) return 'left';
  const full = yamlValue(text);
  expect(full, `quickRead accepted a text the yaml package refuses:\n${text}`).toBeDefined();
  expect(quick.value, `quickRead read differently:\n${text}`).toEqual(full?.value);
  return 'accepted';
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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
  '#x',
  'a #b',
  'a#b',
  "it's",
  'say "hi"',
  '',
  ' lead',
  'trail ',
  '[x]',
  '{y}',
  '- z',
  ': q',
  '&a',
  '*b',
  '!t',
  '|',
  '>',
  '@x',
  '%p',
  '?',
  '0x1F',
  '.inf',
  '007',
  '+5',
  '1e3',
];
const KEYS = ['name', 'tenant', 'subject', 'id', 'type', 'properties', 'team', 'a b', 'k-1', 'x.y', '"quoted key"', "'single'"];
const TRICKY_KEYS = ['1', 'true', 'null', 'a:b', 'a,b', '-k', '? k', '"a"b'];

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
  const comment = (): string => (r() < 0.15 ? `${r() < 0.5 ? ' ' : '  '}# note: ${pick(WORDS)}` : '');
  const lines: string[] = [];
  const extra = (indent: string): void => {
    if (r() < 0.08) lines.push('');
    if (r() < 0.05) lines.push(`${r() < 0.5 ? indent : ''}# a comment line`);
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
      } else lines.push(`${head} ${roll < 0.7 ? scalarText() : flow(0)}${comment()}`);
    }
  };
  return (): string => {
    lines.length = 0;
    if (r() < 0.1) lines.push('---');
    block('', 0, 'map');
    return `${lines.join('\n')}${r() < 0.9 ? '\n' : ''}`;
  };
}

describe('quickRead', () => {
  it('reads a test file written in the common style, with the offset of every case', () => {
    const text = [
      '# cases for acme',
      'tenant: acme',
      'defaults:',
      '  subject: {type: user, properties: {team: blue}}',
      'cases:',
      '  - name: a blue member reads, then writes # comment',
      '    action: read',
      '    resource: {type: document, id: "d-1", properties: {team: blue, level: 3, ratio: 0.5, open: true, note: null}}',
      '    expect: allow',
      "  - {name: 'it''s denied', action: delete, resource: {type: document, id: d-2}, expect: deny}",
      '',
    ].join('\n');
    const quick = quickRead(text);
    expect(quick?.value).toEqual(yamlValue(text)?.value);
    const cases = quick?.value['cases'] as unknown[];
    expect(quick?.itemOffsets.get(cases)?.map((o) => text.slice(o, o + 12))).toEqual(['name: a blue', "{name: 'it''"]);
  });

  it('reads the example test files as the yaml package does', () => {
    const dir = join(ROOT, 'examples');
    const files = readdirSync(dir).filter((f) => /\.test\.ya?ml$/.test(f));
    for (const f of files) expect(agreement(readFileSync(join(dir, f), 'utf8')), f).toBe('accepted');
  });

  it('leaves to the yaml package what it does not read itself', () => {
    const left = [
      'a: &x 1\nb: *x\n',
      'a: !!str 1\n',
      'a: |\n  text\n',
      'a: >\n  folded\n',
      'a: plain\n  continued\n',
      'a: "two\n  lines"\n',
      'a: {b: 1,\n  c: 2}\n',
      'a:\tb\n',
      'a: b\r\n',
      '? a\n: b\n',
      'a: 1\na: 2\n',
      'a: {b: 1, b: 2}\n',
      'a: 0x1F\n',
      'a: 1e3\n',
      'a: .inf\n',
      'a: 12345678901234567890\n',
      '- a\n- b\n',
      '',
      '# only a comment\n',
      'a: 1\n---\nb: 2\n',
      'a: 1\n...\n',
      '%YAML 1.2\n---\na: 1\n',
      '__proto__: {}\n',
      'a: "\\x41"\n',
      'a: b: c\n',
      '  a: 1\n',
    ];
    for (const text of left) expect(quickRead(text), JSON.stringify(text)).toBeUndefined();
  });

  it('reads generated YAML of plain content exactly as the yaml package does, and accepts nearly all of it', () => {
    const next = generator(20261124, 0);
    let accepted = 0;
    const total = 2000;
    for (let i = 0; i < total; i++) if (agreement(next()) === 'accepted') accepted++;
    expect(accepted).toBeGreaterThan(total * 0.9);
  });

  it('reads generated YAML with unusual scalars and keys exactly as the yaml package does', () => {
    const next = generator(99, 0.3);
    let accepted = 0;
    for (let i = 0; i < 3000; i++) if (agreement(next()) === 'accepted') accepted++;
    expect(accepted).toBeGreaterThan(100);
  });

  it('never reads a mutated text differently from the yaml package', () => {
    const next = generator(777, 0.1);
    const r = rng(4242);
    const chars = [':', ' ', '-', '#', '{', '}', '[', ']', ',', "'", '"', '\n', '\n  ', '&', '*', '!', '|', '>', '?', 'x', '1', '.', '\\'];
    let accepted = 0;
    for (let i = 0; i < 6000; i++) {
      let text = next();
      for (let edits = 1 + Math.floor(r() * 3); edits > 0; edits--) {
        const at = Math.floor(r() * (text.length + 1));
        const roll = r();
        if (roll < 0.4) text = text.slice(0, at) + text.slice(at + 1);
        else if (roll < 0.8) text = text.slice(0, at) + (chars[Math.floor(r() * chars.length)] as string) + text.slice(at);
        else text = `${text.slice(0, at)} ${text.slice(at)}`;
      }
      if (agreement(text) === 'accepted') accepted++;
    }
    expect(accepted).toBeGreaterThan(300);
  });
});
