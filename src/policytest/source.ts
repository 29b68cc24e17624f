// A test file's text → its value, and the line and column of any part of it. The quick reader
// (quickyaml.ts) reads the common style; anything else, and every position it does not record, comes
// from the yaml package's Document (parsed on first need, so a passing run of a quick-read file never
// builds one).
import { isMap, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { isObject } from '../api/index.ts';
import { quickRead } from './quickyaml.ts';

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

function childOf(v: unknown, part: string | number): unknown {
  if (Array.isArray(v)) return typeof part === 'number' ? v[part] : undefined;
  return isObject(v) ? v[part] : undefined;
}

function parsed(text: string): { doc: Document; lines: LineCounter } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  return { doc, lines };
}

/** The file's value with positions, or the YAML errors that keep it from having one. */
export function readSource(file: string, text: string): SourceFile | FileError[] {
  const quick = quickRead(text);
  let full: { doc: Document; lines: LineCounter } | undefined;
  let value: unknown;
  if (quick === undefined) {
    full = parsed(text);
    const { doc, lines } = full;
    if (doc.errors.length > 0) {
      return doc.errors.map((e) => {
        const { line, col } = lines.linePos(e.pos[0]);
        const message = e.code === 'MULTIPLE_DOCS' ? 'a test file holds one YAML document (no second ---)' : e.message.split('\n')[0];
        return { file, line, column: col, message: `invalid YAML: ${message}` };
      });
    }
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      return [{ file, line: 1, column: 1, message: `invalid YAML: ${err instanceof Error ? err.message : String(err)}` }];
    }
  } else value = quick.value;
  let starts: number[] | undefined;
  return {
    file,
    value,
    position(path, at = 'value') {
      // A sequence item the quick reader recorded needs no Document.
      const last = path[path.length - 1];
      if (quick !== undefined && at === 'value' && typeof last === 'number') {
        let owner: unknown = quick.value;
        for (const part of path.slice(0, -1)) owner = childOf(owner, part);
        const offset = Array.isArray(owner) ? quick.itemOffsets.get(owner)?.[last] : undefined;
        if (offset !== undefined) {
          starts ??= lineStarts(text);
          return positionIn(starts, offset);
        }
      }
      full ??= parsed(text);
      const { line, col } = full.lines.linePos(offsetIn(full.doc, path, at));
      return { line, column: col };
    },
  };
}
