// A test file read in pieces when it is large: the yaml package builds a file's whole parse tree and
// Document before any value, and on 10,000 cases (1.5 MB) that heap costs it a third of its time in
// garbage collection (docs/benchmarks.md#acl-operator-test). The items of the top-level `cases:` are cut
// into pieces of whole lines where an item starts, each piece is read by readSource alone, as `cases:`
// and its items, so is the rest of the file, and the reads are joined; each piece's tree dies young.
// Any doubt and the file is read whole instead: an error or an unresolved tag in any part, an alias to
// another part, `cases` not where the cut left it. A cut inside a quoted scalar or a flow collection
// leaves one part unterminated, so a joined read is the whole read (test/policytest/pieces.test.ts).
import { isObject } from '../api/index.ts';
import { type FileError, type Position, readSource, type SourceFile } from './source.ts';

/** The items of `cases:` in pieces, and the rest of the file. */
export interface Cut {
  /** The file without the lines of the items: its `cases` reads as null. */
  readonly rest: string;
  readonly pieces: readonly Piece[];
}

export interface Piece {
  /** `cases:`, then whole lines of items as the file has them. */
  readonly text: string;
  /** The line of the file the piece's items start on (line 2 of its text). */
  readonly line: number;
}

/** What a piece holds: its cases and where each starts in the file. */
export interface PieceRead {
  readonly cases: readonly unknown[];
  readonly starts: readonly Position[];
}

/** The key line: `cases:` at the start of a line, nothing after it but a comment (after a space: `cases:#x` is a text). */
const CASES_KEY = /^cases:(?:[ \t]+(?:#.*)?)?\r?$/;

/** A line's indentation (spaces), and what it is for the cut: nothing (blank or a comment), an item start, or other. */
function lineKind(line: string): { readonly indent: number; readonly kind: 'none' | 'item' | 'other' } {
  let indent = 0;
  while (line[indent] === ' ') indent++;
  const first = line[indent];
  if (first === undefined || first === '#' || /^[ \t\r]*$/.test(line.slice(indent))) return { indent, kind: 'none' };
  const next = line[indent + 1];
  const item = first === '-' && (next === undefined || next === ' ' || next === '\r');
  return { indent, kind: item ? 'item' : 'other' };
}

/**
 * A piece holds items up to about this many bytes. Measured on bench/policytest.ts's files: pieces of
 * 1-8 KiB read in two thirds of the whole file's time, from 16 KiB no faster (a piece's tree, about
 * 100 times its text, then outlives V8's young generation and is copied and promoted as the whole's is).
 */
export const PIECE_BYTES = 4 * 1024;

/**
 * The file's items cut into pieces of about `pieceBytes`, or undefined where there is no second
 * piece or no cut is sure: directives (they change how every part reads), no `cases:` line or two,
 * its value not a block sequence.
 */
export function cutCases(text: string, pieceBytes = PIECE_BYTES): Cut | undefined {
  if (text.length < 2 * pieceBytes || /^%/m.test(text)) return undefined;
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  const lineAt = (i: number): string => text.slice(starts[i], i + 1 < starts.length ? (starts[i + 1] as number) - 1 : text.length);
  let key = -1;
  for (let i = 0; i < starts.length; i++) {
    if (!CASES_KEY.test(lineAt(i))) continue;
    if (key >= 0) return undefined;
    key = i;
  }
  if (key < 0) return undefined;
  // The items: from the first line under the key, while lines are blank, comments, indented past the
  // items, or start an item at their indentation.
  const items: number[] = [];
  let indent = -1;
  let end = starts.length;
  for (let i = key + 1; i < starts.length; i++) {
    const line = lineKind(lineAt(i));
    if (line.kind === 'none') continue;
    if (indent < 0) {
      // The value of `cases:` is a block sequence, or not cut.
      if (line.kind !== 'item') return undefined;
      indent = line.indent;
    }
    if (line.indent > indent) continue;
    if (line.indent === indent && line.kind === 'item') {
      items.push(i);
      continue;
    }
    end = i;
    break;
  }
  const offset = (line: number): number => (line < starts.length ? (starts[line] as number) : text.length);
  // A piece ends at the first item start past pieceBytes from its own start.
  const bounds = items.slice(0, 1);
  for (const i of items) if (offset(i) - offset(bounds[bounds.length - 1] as number) >= pieceBytes) bounds.push(i);
  if (bounds.length < 2) return undefined;
  bounds.push(end);
  const pieces = bounds.slice(0, -1).map((from, p) => ({
    text: `cases:\n${text.slice(offset(from), offset(bounds[p + 1] as number))}`,
    line: from + 1,
  }));
  return { rest: text.slice(0, offset(items[0] as number)) + text.slice(offset(end)), pieces };
}

/** A piece read as a test file of its own; undefined unless it reads cleanly as `cases:` and its items. */
export function readPiece(piece: Piece): PieceRead | undefined {
  const source = readSource('piece', piece.text);
  if (Array.isArray(source) || !isObject(source.value)) return undefined;
  const cases = source.value['cases'];
  if (Object.keys(source.value).length !== 1 || !Array.isArray(cases)) return undefined;
  const starts = cases.map((_, i) => {
    const { line, column } = source.position(['cases', i]);
    return { line: line - 2 + piece.line, column };
  });
  return { cases, starts };
}

/** The file as its pieces and rest read it, or undefined when they do not join (the file is then read whole). */
export function joinPieces(file: string, text: string, cut: Cut, reads: readonly (PieceRead | undefined)[]): SourceFile | undefined {
  if (reads.length !== cut.pieces.length || reads.some((r) => r === undefined)) return undefined;
  const rest = readSource(file, cut.rest);
  if (Array.isArray(rest) || !isObject(rest.value) || !Object.hasOwn(rest.value, 'cases') || rest.value['cases'] !== null) return undefined;
  const starts = reads.flatMap((r) => r?.starts ?? []);
  // In place: the key stays where the file has it.
  rest.value['cases'] = reads.flatMap((r) => r?.cases ?? []);
  let whole: SourceFile | undefined;
  return {
    file,
    value: rest.value,
    position(path, at = 'value') {
      const start = path.length === 2 && path[0] === 'cases' && at === 'value' && typeof path[1] === 'number' ? starts[path[1]] : undefined;
      if (start !== undefined) return start;
      // Any other place (an error's, rare): the whole file read, once.
      if (whole === undefined) {
        const read = readSource(file, text);
        if (Array.isArray(read)) return { line: 1, column: 1 };
        whole = read;
      }
      return whole.position(path, at);
    },
  };
}

/** A test file's value with positions, or its YAML errors: in pieces when it is large, else whole (readSource). */
export function readTestFile(file: string, text: string, pieceBytes = PIECE_BYTES): SourceFile | FileError[] {
  const cut = cutCases(text, pieceBytes);
  if (cut === undefined) return readSource(file, text);
  const reads: PieceRead[] = [];
  for (const piece of cut.pieces) {
    const read = readPiece(piece);
    // A piece that does not read cleanly: the whole file, for its errors.
    if (read === undefined) return readSource(file, text);
    reads.push(read);
  }
  return joinPieces(file, text, cut, reads) ?? readSource(file, text);
}
