// A test file's text → its value, and the line and column of any part of it. js-yaml reads the value
// (load.ts) and where each case starts; every other position, and the wording of a YAML error, comes
// from the yaml package's Document (the manifests' reader), parsed only when an error must be placed or
// the text has a tag or a tab (see readSource), so a passing run of a plain file never builds one.
import { YAMLException } from 'js-yaml';
import { isMap, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { loadTestFile, type Loaded } from './load.ts';

export interface Position {
  /** 1-based */
  readonly line: number;
  /** 1-based */
  readonly column: number;
}

export type Path = readonly (string | number)[];

/** A place in a test file a person is sent to, and what is wrong there. */
export interface FileError extends Position {
  readonly file: string;
  readonly message: string;
}

export interface SourceFile {
  readonly file: string;
  readonly value: unknown;
  /**
   * Where the node at `path` starts (with `key`, where its key does, for a mapping entry); a part of the
   * path that does not exist stops the walk at the deepest node that does.
   */
  position(path: Path, at?: 'key' | 'value'): Position;
}

/** Offsets of line starts, for offset → line and column. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function positionIn(starts: readonly number[], offset: number): Position {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((starts[mid] as number) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: offset - (starts[lo] as number) + 1 };
}

/** The offset of the node at `path` in a yaml Document (see SourceFile.position). */
function offsetIn(doc: Document, path: Path, at: 'key' | 'value'): number {
  let node: Node | null = doc.contents;
  let offset = node?.range?.[0] ?? 0;
  for (const [i, part] of path.entries()) {
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => {
        const k = p.key as Node | null;
        return k !== null && typeof k === 'object' && 'value' in k && String(k.value) === String(part);
      });
      if (pair === undefined) return offset;
      const key = pair.key as Node | null;
      const value = pair.value as Node | null;
      if (last && at === 'key') return key?.range?.[0] ?? offset;
      offset = value?.range?.[0] ?? key?.range?.[0] ?? offset;
      node = value;
    } else if (isSeq(node) && typeof part === 'number') {
      const item = node.items[part] as Node | undefined;
      if (item === undefined) return offset;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else return offset;
  }
  return offset;
}

interface Parsed {
  readonly doc: Document;
  readonly lines: LineCounter;
}

function parsed(text: string): Parsed {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  return { doc, lines };
}

/** The yaml package's errors in a text, worded as the manifests' are, and its tags it cannot resolve. */
function documentErrors(file: string, { doc, lines }: Parsed): FileError[] {
  const unresolved = doc.warnings.filter((w) => w.code === 'TAG_RESOLVE_FAILED');
  return [...doc.errors, ...unresolved].map((e) => {
    const { line, col } = lines.linePos(e.pos[0]);
    const words = e.code === 'MULTIPLE_DOCS' ? 'a test file holds one YAML document (no second ---)' : e.message.split('\n')[0];
    const message = e.code === 'TAG_RESOLVE_FAILED' ? `${words} (a tag of YAML 1.2's core schema, on a value that fits it)` : words;
    return { file, line, column: col, message: `invalid YAML: ${message}` };
  });
}

/** The file's value with positions, or the YAML errors that keep it from having one. */
export function readSource(file: string, text: string): SourceFile | FileError[] {
  let full: Parsed | undefined;
  let loaded: Loaded;
  try {
    loaded = loadTestFile(text);
  } catch (err) {
    if (!(err instanceof YAMLException)) throw err;
    // The yaml package's words where it sees an error too, else (an unknown tag, say) js-yaml's.
    full = parsed(text);
    const errors = documentErrors(file, full);
    if (errors.length > 0) return errors;
    return [{ file, line: (err.mark?.line ?? 0) + 1, column: (err.mark?.column ?? 0) + 1, message: `invalid YAML: ${err.reason}` }];
  }
  if (loaded.tagged || text.includes('\t')) {
    // Where js-yaml reads more than the yaml package, and rare in a test file: a tag (`!!float 1` is
    // 1 to js-yaml, the text "1" to the yaml package), a tab between tokens (`- \t&a x`, a line of a
    // tab under `a:`). Such a text is checked by the yaml package too.
    full = parsed(text);
    const errors = documentErrors(file, full);
    if (errors.length > 0) return errors;
  }
  const { value, caseOffsets } = loaded;
  let starts: number[] | undefined;
  return {
    file,
    value,
    position(path, at = 'value') {
      // A case (a mapping item of the top-level cases) needs no Document.
      const offset =
        path.length === 2 && path[0] === 'cases' && at === 'value' && typeof path[1] === 'number' ? caseOffsets[path[1]] : undefined;
      if (offset !== undefined && offset >= 0) {
        starts ??= lineStarts(text);
        return positionIn(starts, offset);
      }
      full ??= parsed(text);
      const { line, col } = full.lines.linePos(offsetIn(full.doc, path, at));
      return { line, column: col };
    },
  };
}
