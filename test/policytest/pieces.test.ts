// A large test file is read in pieces (src/policytest/pieces.ts): the read must be the whole read,
// value for value and every case at its line and column, or the same errors. Checked on generated
// files of many item styles, those files mutated at random, and texts made to sit on a cut (an alias
// to another piece, a scalar or flow collection over a cut, a directive).
import { describe, expect, it } from 'vitest';
import { cutCases, joinPieces, PIECE_BYTES, readPiece, readTestFile } from '../../src/policytest/pieces.ts';
import { type FileError, readSource, type SourceFile } from '../../src/policytest/source.ts';
import { rng } from '../support/corpus.ts';

/** What a read gives: the value and every case's line and column, or the errors as `line:column: message`. */
function outcome(read: SourceFile | FileError[]): unknown {
  if (Array.isArray(read)) return read.map((e) => `${e.line}:${e.column}: ${e.message}`);
  const cases = (read.value as { cases?: unknown } | null)?.cases;
  const at = Array.isArray(cases) ? cases.map((_, i) => read.position(['cases', i])) : [];
  return { value: read.value, at, tenant: read.position(['tenant'], 'key') };
}

/** The text read in pieces of about `pieceBytes` (as readTestFile does), else whole; and whether it was read in pieces. */
function inPieces(text: string, pieceBytes: number): { read: SourceFile | FileError[]; cut: boolean } {
  const cut = cutCases(text, pieceBytes);
  if (cut === undefined) return { read: readSource('t.test.yaml', text), cut: false };
  const joined = joinPieces('t.test.yaml', text, cut, cut.pieces.map(readPiece));
  return { read: joined ?? readSource('t.test.yaml', text), cut: joined !== undefined };
}

/** One case in one of many styles, its lines indented by `at` (the item's `-`). */
function item(r: () => number, i: number, at: string): string[] {
  const pad = `${at}  `;
  const request = 'subject: {type: user, id: u}, action: read, resource: {type: document, id: d}';
  switch (Math.floor(r() * 12)) {
    case 0:
      return [`${at}- {name: c${i}, ${request}, expect: allow}`];
    case 1:
      return [`${at}- name: c${i}`, `${pad}subject: {type: user, id: u}`, `${pad}action: read`, `${pad}expect: deny`];
    case 2:
      // The item's mapping on the lines below its `-`, after a comment.
      return [`${at}-`, `${pad}# below`, `${pad}name: c${i}`, `${pad}expect: deny`];
    case 3:
      // Block scalars, kept and stripped, with blank lines after them.
      return [`${at}- name: c${i}`, `${pad}reason: |+`, `${pad}  kept`, '', `${pad}rule: >-`, `${pad}  folded`, `${pad}  text`, ''];
    case 4:
      // A plain scalar and a double-quoted one over several lines.
      return [`${at}- name: c${i} and`, `${pad}  more words`, `${pad}reason: "a quoted`, `${pad}  reason"`];
    case 5:
      // A flow mapping over several lines.
      return [`${at}- {name: c${i},`, `${pad}  ${request},`, `${pad}  expect: allow}`];
    case 6:
      // An anchor and its alias inside the item; a tag.
      return [`${at}- name: !!str c${i}`, `${pad}subject: &who {type: user, id: u${i}}`, `${pad}resource: *who`, `${pad}expect: deny`];
    case 7:
      // Comments at other indentations, and an item that is a list.
      return ['# a comment at the start of a line', `${at}- [c${i}, x]`, `${pad}# more`];
    case 8:
      return [`${at}- name: 'c${i}' # trailing comment`, `${pad}expect: allow`];
    case 9:
      // A block scalar as the item, keeping the blank lines after it (up to the next item, or the file's end).
      return [`${at}- |+`, `${pad}text ${i}`, ''];
    case 10:
      // Lists in the item, one at its key's indentation.
      return [`${at}- name: c${i}`, `${pad}bundle:`, `${pad}  - a`, `${pad}  - b`, `${pad}roles:`, `${pad}- x`];
    default:
      return [`${at}- c${i}`];
  }
}

/** A test file of `n` generated cases, keys around them, in one of a few layouts. */
function generated(r: () => number, n: number): string {
  const at = ['', '  ', '    '][Math.floor(r() * 3)] as string;
  const lines = ['tenant: acme'];
  if (r() < 0.5) lines.push('defaults:', '  subject: {type: user}');
  lines.push(r() < 0.3 ? 'cases: # the cases' : 'cases:');
  if (r() < 0.3) lines.push('');
  for (let i = 0; i < n; i++) lines.push(...item(r, i, at));
  if (r() < 0.5) lines.push('entities:', '  alice: {type: user, id: alice}');
  const eol = r() < 0.15 ? '\r\n' : '\n';
  return lines.join(eol) + (r() < 0.8 ? eol : '');
}

describe('reading a large test file in pieces', () => {
  it('reads generated files of many item styles exactly as it reads them whole', () => {
    const r = rng(2026);
    let cut = 0;
    for (let i = 0; i < 300; i++) {
      const text = generated(r, 4 + Math.floor(r() * 30));
      const pieces = inPieces(text, [1, 60, 200][Math.floor(r() * 3)] as number);
      if (pieces.cut) cut++;
      expect(outcome(pieces.read), text).toEqual(outcome(readSource('t.test.yaml', text)));
    }
    // Most were read in pieces: the comparison is not with the whole read itself.
    expect(cut).toBeGreaterThan(200);
  });

  it('never reads a mutated file otherwise than whole, nor accepts one the whole read refuses', () => {
    const r = rng(77);
    const chars = [':', ' ', '-', '#', '{', '}', '[', ']', ',', "'", '"', '\n', '\n  ', '&a ', '*a', '!', '|', '>', '?', 'x', '\t', '%'];
    let cut = 0;
    for (let i = 0; i < 3000; i++) {
      let text = generated(r, 4 + Math.floor(r() * 12));
      for (let edits = 1 + Math.floor(r() * 3); edits > 0; edits--) {
        const at = Math.floor(r() * (text.length + 1));
        const roll = r();
        if (roll < 0.4) text = text.slice(0, at) + text.slice(at + 1);
        else text = text.slice(0, at) + (chars[Math.floor(r() * chars.length)] as string) + text.slice(at);
      }
      const pieces = inPieces(text, [1, 60, 200][Math.floor(r() * 3)] as number);
      if (pieces.cut) cut++;
      expect(outcome(pieces.read), JSON.stringify(text)).toEqual(outcome(readSource('t.test.yaml', text)));
    }
    expect(cut).toBeGreaterThan(1000);
  });

  it('reads the whole file where a cut would change the reading', () => {
    const items = (n: number, f: (i: number) => string): string => Array.from({ length: n }, (_, i) => f(i)).join('\n');
    // Each text, and what becomes of its cut: none made, or made and its reads refused to join.
    const texts: readonly (readonly [string, 'not cut' | 'refused'])[] = [
      // An alias to an anchor of another piece, or of the rest of the file.
      [`cases:\n  - &first {name: a}\n${items(7, (i) => `  - {name: c${i}}`)}\n  - *first\n`, 'refused'],
      [`entities: {alice: &alice {type: user, id: alice}}\ncases:\n${items(8, (i) => `  - {name: c${i}, subject: *alice}`)}\n`, 'refused'],
      // A directive changes how every part reads.
      [`%YAML 1.1\n---\ncases:\n${items(8, (i) => `  - {name: c${i}, on: yes}`)}\n`, 'not cut'],
      // A quoted scalar and a flow sequence over a line that starts like an item.
      [
        `cases:\n${items(4, (i) => `  - {name: c${i}}`)}\n  - {name: "split\n  - here"}\n${items(4, (i) => `  - {name: d${i}}`)}\n`,
        'refused',
      ],
      [`cases:\n${items(4, (i) => `  - {name: c${i}}`)}\n  - [a,\n  - b]\n${items(4, (i) => `  - {name: d${i}}`)}\n`, 'refused'],
      // A line after the items that the rest would read as the value of cases.
      [`cases:\n${items(8, (i) => `    - {name: c${i}}`)}\n  tail: x\n`, 'refused'],
      // An error inside a case, and a key given twice in the rest: their errors are the whole read's.
      [`cases:\n${items(8, (i) => `  - {name: c${i}${i === 5 ? ', name: again' : ''}}`)}\n`, 'refused'],
      [`tenant: a\ncases:\n${items(8, (i) => `  - {name: c${i}}`)}\ntenant: b\n`, 'refused'],
    ];
    for (const [text, fate] of texts) {
      const cut = cutCases(text, 1);
      const joined = cut && joinPieces('t.test.yaml', text, cut, cut.pieces.map(readPiece));
      expect(cut === undefined ? 'not cut' : joined === undefined ? 'refused' : 'joined', text).toBe(fate);
      expect(outcome(readTestFile('t.test.yaml', text, 1)), text).toEqual(outcome(readSource('t.test.yaml', text)));
    }
  });

  it('reads a file of thousands of cases in pieces of the usual size, as it reads it whole', () => {
    const text = generated(rng(5), 3000);
    expect(text.length).toBeGreaterThan(10 * PIECE_BYTES);
    expect(cutCases(text)?.pieces.length).toBeGreaterThan(10);
    expect(outcome(readTestFile('big.test.yaml', text))).toEqual(outcome(readSource('big.test.yaml', text)));
  });
});
