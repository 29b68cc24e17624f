// A test file's text → its value, and the line and column of any part of it, from one parse by the yaml
// package, the manifests' reader (standalone/objects.ts), with the manifests' options: YAML 1.2's core
// schema, duplicate keys refused, at most 100 aliases. One Document gives the value and every position.
import { isMap, isSeq, LineCounter, parseDocument, visit, type Alias, type Document, type Node } from 'yaml';

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

/** The offset of the node at `path` in a yaml Document (see SourceFile.position). */
function offsetIn(doc: Document, path: Path, at: 'key' | 'value'): number {
  let node: Node | null = doc.contents;
  let offset = node?.range?.[0] ?? 0;
  for (const [i, part] of path.entries()) {
    const last = i === path.length - 1;
    if (isMap(node)) {
      // A key as the value names it: a scalar's value as text, null (`null:`, `~:`, none) as "".
      const pair = node.items.find((p) => {
        const k = p.key as Node | null;
        return k !== null && typeof k === 'object' && 'value' in k && (k.value === null ? '' : String(k.value)) === String(part);
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

/** The yaml package's errors in a text, worded as the manifests' are, and its tags it cannot resolve. */
function documentErrors(file: string, doc: Document, lines: LineCounter): FileError[] {
  const unresolved = doc.warnings.filter((w) => w.code === 'TAG_RESOLVE_FAILED');
  return [...doc.errors, ...unresolved].map((e) => {
    const { line, col } = lines.linePos(e.pos[0]);
    const words = e.code === 'MULTIPLE_DOCS' ? 'a test file holds one YAML document (no second ---)' : e.message.split('\n')[0];
    const message = e.code === 'TAG_RESOLVE_FAILED' ? `${words} (a tag of YAML 1.2's core schema, on a value that fits it)` : words;
    return { file, line, column: col, message: `invalid YAML: ${message}` };
  });
}

/** What to do about too many aliases (the yaml package's count: 100 aliases of a node, fewer of one holding aliases). */
const ALIAS_HINT = 'at most 100 aliases of a node, fewer if it holds aliases; entities: names a subject or resource once for every case';

/**
 * The alias a failed toJS is about: the yaml package says what (an alias before its anchor, too many
 * aliases) but not where. The first alias of the name it gives, else the file's first alias.
 */
function aliasError(file: string, doc: Document, lines: LineCounter, err: ReferenceError): FileError {
  const aliases: Alias[] = [];
  visit(doc, {
    Alias(_, node) {
      aliases.push(node);
    },
  });
  const named = aliases.find((a) => err.message.endsWith(`: ${a.source}`));
  const { line, col } = lines.linePos((named ?? aliases[0])?.range?.[0] ?? 0);
  const hint = named === undefined ? ` (${ALIAS_HINT})` : '';
  return { file, line, column: col, message: `invalid YAML: ${err.message}${hint}` };
}

/** The file's value with positions, or the YAML errors that keep it from having one. */
export function readSource(file: string, text: string): SourceFile | FileError[] {
  const lines = new LineCounter();
  // resolveKnownTags: false, unlike a manifest: YAML 1.1's !!timestamp, !!binary, !!set... would make a
  // Date, bytes or a Set in a request that stands for a JSON body. Refused (documentErrors), never read.
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false, resolveKnownTags: false });
  const errors = documentErrors(file, doc, lines);
  if (errors.length > 0) return errors;
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    if (!(err instanceof ReferenceError)) throw err;
    return [aliasError(file, doc, lines, err)];
  }
  return {
    file,
    value,
    position(path, at = 'value') {
      const { line, col } = lines.linePos(offsetIn(doc, path, at));
      return { line, column: col };
    },
  };
}
