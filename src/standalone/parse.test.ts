import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readObjects } from './objects.ts';
import { rng } from '../../test/support/corpus.ts';
import { parseManifest, splitDocuments } from './parse.ts';

const RULE = (name: string, condition = 'principal.team == resource.team'): string => `apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: ${name}, namespace: acme }
spec:
  state: Enforced
  subjectType: user
  actions: [read]
  resourceType: document
  condition: ${JSON.stringify(condition)}
`;

const TRICKY = [
  '',
  '# only a comment\n',
  '---\n',
  '---\n---\n',
  `${RULE('a')}---\n`,
  `# lead\n---\n${RULE('a')}`,
  `${RULE('a')}...\n${RULE('b')}`,
  `${RULE('a')}--- ${RULE('b').replace('\n', ' ').split('\n')[0]}\n`,
  `${RULE('a')}---\nkind: [\n---\n${RULE('b')}`,
  `${RULE('a')}---\n  description: |\n    text\n---\n${RULE('b')}`,
  `%YAML 1.2\n---\n${RULE('a')}`,
  `${RULE('a')}---\nfoo: bar\n---\n\n---\n${RULE('b')}`,
  `\uFEFF${RULE('a')}`,
  `${RULE('a')}----\n`,
  `${RULE('a')}---\t# comment\n${RULE('b')}`,
  `${RULE('a')}\r\n---\r\n${RULE('b').replaceAll('\n', '\r\n')}`,
];

function examples(): string[] {
  const dir = join(import.meta.dirname, '../../examples');
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => readFileSync(join(dir, f), 'utf8'));
}

describe('parseManifest', () => {
  it('gives exactly what parsing the whole file gives: objects, document numbers, problems', () => {
    for (const text of [...TRICKY, ...examples()]) {
      const whole = readObjects(text, 'f.yaml');
      const cut = parseManifest(text, 'f.yaml', 1000, undefined);
      expect(
        cut.objects.map((o) => o.object),
        JSON.stringify(text),
      ).toEqual(whole.objects);
      expect(cut.problems, JSON.stringify(text)).toEqual(whole.problems);
      expect(cut.unreadable).toBe(whole.unreadable);
    }
  });

  it('re-parses only the documents whose text changed', () => {
    const docs = Array.from({ length: 50 }, (_, i) => RULE(`r${i}`));
    const first = parseManifest(docs.join('---\n'), 'f.yaml', 1000, undefined);
    const edited = [...docs];
    edited[7] = RULE('r7', 'principal.team != resource.team');
    const second = parseManifest(edited.join('---\n'), 'f.yaml', 1000, first.cache);
    // Unchanged documents are taken from the first parse (the very same results); the edited one is new.
    const earlier = new Set(first.cache.pieces.map((p) => p.read));
    expect(second.cache.pieces.filter((p) => earlier.has(p.read))).toHaveLength(49);
    expect(second.objects.map((o) => o.object.document)).toEqual(first.objects.map((o) => o.object.document));
    expect(second.objects[7]?.specDigest).not.toBe(first.objects[7]?.specDigest);
    expect(second.objects[7]?.fingerprint).not.toBe(first.objects[7]?.fingerprint);
    expect(second.objects[8]?.fingerprint).toBe(first.objects[8]?.fingerprint);
  });

  it('refuses a file with more documents than the limit, with a problem naming the limit', () => {
    const read = parseManifest(Array.from({ length: 11 }, (_, i) => RULE(`r${i}`)).join('---\n'), 'big.yaml', 10, undefined);
    expect(read.objects).toEqual([]);
    expect(read.unreadable).toBe(true);
    expect(read.problems[0]?.message).toMatch(/11 documents, more than the limit of 10 \(--max-manifest-documents\)/);
  });

  it('cuts before document markers only at the start of a line', () => {
    expect(splitDocuments('a: 1\n---\nb: "--- x"\n ---\n---x\n')).toEqual(['a: 1\n', '---\nb: "--- x"\n ---\n---x\n']);
    expect(splitDocuments('%YAML 1.2\n---\na: 1\n')).toBeUndefined();
  });
});

describe('parseManifest after an earlier parse of the file', () => {
  it('gives exactly what a cold parse gives, over 200 random edits in a row', () => {
    const random = rng(2611);
    const pick = (n: number): number => Math.floor(random() * n);
    // Documents that look alike (so places and texts can be confused), markers inside values, a broken one.
    const kinds = [
      (i: number) => RULE(`r${i % 7}`),
      (i: number) => RULE(`r${i}`, `principal.n != ${i % 3}`),
      () => 'a: "--- not a marker"\n',
      () => '\n',
      () => 'kind: [broken\n',
    ];
    let docs = Array.from({ length: 30 }, (_, i) => (kinds[i % 2] as (i: number) => string)(i));
    const seps = Array.from({ length: 7 }, () => '---\n');
    let previous = parseManifest(docs.join('---\n'), 'f.yaml', 1000, undefined);
    for (let step = 0; step < 200; step++) {
      const at = pick(docs.length + 1);
      const op = pick(4);
      const doc = (kinds[pick(kinds.length)] as (i: number) => string)(step);
      if (op === 0) docs.splice(at, 0, doc);
      else if (op === 1) docs.splice(at, 1);
      else if (op === 2) docs[Math.min(at, docs.length - 1)] = doc;
      else docs = [...docs.slice(at), ...docs.slice(0, at)];
      // Separators differ by place, and some are not markers ('---#'): a cut that moves by a character.
      if (pick(2)) seps[pick(seps.length)] = ['---\n', '--- \n', '---#\n'][pick(3)] as string;
      const text = docs.map((d, i) => (i === 0 ? d : `${seps[i % seps.length]}${d}`)).join('');
      const warm = parseManifest(text, 'f.yaml', 1000, previous.cache);
      const cold = parseManifest(text, 'f.yaml', 1000, undefined);
      expect(warm.objects, `step ${step}`).toEqual(cold.objects);
      expect(warm.problems, `step ${step}`).toEqual(cold.problems);
      expect([warm.unreadable, warm.documents, warm.objectCount], `step ${step}`).toEqual([
        cold.unreadable,
        cold.documents,
        cold.objectCount,
      ]);
      // Each document's read is its own text's, even where the file is read whole (a YAML error).
      expect(
        warm.pieces?.map((p) => [p.text, p.read]),
        `step ${step}`,
      ).toEqual(cold.pieces?.map((p) => [p.text, p.read]));
      previous = warm;
    }
  });
});
