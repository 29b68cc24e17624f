// One manifest file's text → its objects, problems and digests: what the folder source needs of a
// file, computed where the file is read (a background thread), never on the event loop. A file is
// parsed one document at a time and each document's result is kept by its text, so re-reading a
// file of 10,000 rules after one edit parses one document.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../bundle/index.ts';
import { readObjects, type DocumentProblem, type ReadObject } from './objects.ts';

/** An object with what the source compares between reads. */
export interface ParsedObject {
  readonly object: ReadObject;
  /** sha256 of labels, annotations, spec and data: a change to any of them is a change to the object. */
  readonly fingerprint: string;
  /** sha256 of the spec alone: the generation moves with it. */
  readonly specDigest: string;
}

/** What a read of one file found (its objects travel separately, in parts). */
export interface ManifestRead {
  readonly stamp: { readonly ino: number; readonly size: number; readonly mtimeMs: number; readonly ctimeMs: number };
  /** sha256 of the bytes read. */
  readonly hash: string;
  /** The file changed while it was read: the bytes are not used. */
  readonly changing: boolean;
  /** How its objects were sent (tasks.ts TaskPart): whole, or document by document. */
  readonly layout?: 'whole' | 'pieces';
  readonly objects: number;
  /** YAML errors, or a limit exceeded: the objects the file held before stay. */
  readonly unreadable: boolean;
  readonly documents: number;
  readonly problems: readonly DocumentProblem[];
}

/**
 * What the last parse of a file gave: its text and each document's text and read, so the next parse
 * takes the documents in the unchanged head and tail of the file by place, without hashing their
 * texts, and looks up by text only the documents where the file changed.
 */
export interface ParseCache {
  readonly text: string;
  readonly pieces: readonly { readonly text: string; readonly read: ChunkRead }[];
}

export interface ChunkRead {
  readonly objects: readonly ParsedObject[];
  readonly problems: readonly DocumentProblem[];
  readonly unreadable: boolean;
  readonly documents: number;
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function fingerprintOf(object: Pick<ReadObject, 'metadata' | 'raw'>): string {
  const { labels, annotations } = object.metadata;
  return sha256Hex(canonicalJson({ labels, annotations, spec: object.raw['spec'], data: object.raw['data'] }));
}

export function specDigestOf(raw: Readonly<Record<string, unknown>>): string {
  return `sha256:${sha256Hex(canonicalJson(raw['spec'] ?? null))}`;
}

/** Characters compared at once when looking for where two texts start (or stop) differing. */
const BLOCK = 4096;

/** How many leading characters `a` and `b` share (in blocks, each compared natively, then one by one). */
function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i + BLOCK <= n && a.slice(i, i + BLOCK) === b.slice(i, i + BLOCK)) i += BLOCK;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** How many trailing characters `a` and `b` share, at most `limit`. */
function commonSuffix(a: string, b: string, limit: number): number {
  let i = 0;
  while (i + BLOCK <= limit && a.slice(a.length - i - BLOCK, a.length - i) === b.slice(b.length - i - BLOCK, b.length - i)) i += BLOCK;
  while (i < limit && a.charCodeAt(a.length - 1 - i) === b.charCodeAt(b.length - 1 - i)) i++;
  return i;
}

/**
 * The earlier read of each chunk that is certainly the same text at the same place: in the unchanged
 * head (the chunk and the marker after it lie in it) or the unchanged tail (the line break before it
 * does). Undefined for a chunk in the changed middle.
 */
function samePlace(chunks: readonly string[], previous: ParseCache, text: string): (ChunkRead | undefined)[] {
  const head = commonPrefix(previous.text, text);
  const tail = commonSuffix(previous.text, text, Math.min(previous.text.length, text.length) - head);
  const shift = previous.pieces.length - chunks.length;
  const out: (ChunkRead | undefined)[] = [];
  let start = 0;
  for (let i = 0; i < chunks.length; i++) {
    const end = start + (chunks[i] as string).length;
    // `---` and the character after it decide a cut: 4 characters past the chunk's end.
    if (end + 4 <= head) out.push(previous.pieces[i]?.read);
    else if (start - 1 >= text.length - tail) out.push(previous.pieces[i + shift]?.read);
    else out.push(undefined);
    start = end;
  }
  return out;
}

/** A line that starts a YAML document (`---` at column 0, then a space, a tab or the line's end). */
const DOCUMENT_START = /^---(?=[ \t\r\n]|$)/gm;

/**
 * The file cut before every document start marker. Undefined when the file has directives (`%YAML`,
 * `%TAG`, which bind to the following document): such a file is parsed whole.
 */
export function splitDocuments(text: string): string[] | undefined {
  if (/^%/m.test(text)) return undefined;
  const starts = [0];
  for (const m of text.matchAll(DOCUMENT_START)) if (m.index > 0) starts.push(m.index);
  return starts.map((s, i) => text.slice(s, starts[i + 1]));
}

function readChunk(text: string, source: string): ChunkRead {
  const read = readObjects(text, source);
  const objects = read.objects.map((object) => ({ object, fingerprint: fingerprintOf(object), specDigest: specDigestOf(object.raw) }));
  return { objects, problems: read.problems, unreadable: read.unreadable, documents: read.documents };
}

/** Parses a manifest file, reusing `previous` for documents whose text did not change. */
export function parseManifest(
  text: string,
  source: string,
  maxDocuments: number,
  previous: ParseCache | undefined,
): {
  readonly objects: ParsedObject[];
  /** objects.length, without making them. */
  objectCount?: number;
  problems: DocumentProblem[];
  unreadable: boolean;
  documents: number;
  cache: ParseCache;
  /** The documents' texts and reads, in order (undefined when the file was parsed whole). */
  pieces?: readonly { readonly text: string; readonly read: ChunkRead }[];
} {
  const chunks = splitDocuments(text);
  if (chunks && chunks.length > maxDocuments) {
    return {
      objects: [],
      unreadable: true,
      documents: chunks.length,
      cache: { text, pieces: [] },
      problems: [
        {
          source,
          document: 0,
          name: undefined,
          message: `the file has ${chunks.length} documents, more than the limit of ${maxDocuments} (--max-manifest-documents): not used; split it into smaller files`,
        },
      ],
    };
  }
  const placed = chunks && previous ? samePlace(chunks, previous, text) : undefined;
  // The changed middle's documents by text: a document moved or repeated there is not parsed again.
  let byText: Map<string, ChunkRead> | undefined;
  const reads = chunks?.map((chunk, i) => {
    const known = placed?.[i];
    if (known) return known;
    if (!byText) {
      byText = new Map();
      const kept = new Set(placed);
      for (const p of previous?.pieces ?? []) if (!kept.has(p.read)) byText.set(p.text, p.read);
    }
    const read = byText.get(chunk) ?? readChunk(chunk, source);
    byText.set(chunk, read);
    return read;
  });
  const cache: ParseCache = { text, pieces: (chunks ?? []).map((t, i) => ({ text: t, read: reads?.[i] as ChunkRead })) };
  // YAML errors are reported from a parse of the whole file, so their lines and columns are the file's.
  if (!reads || reads.some((r) => r.unreadable)) {
    const whole = readChunk(text, source);
    if (whole.documents > maxDocuments) {
      return {
        objects: [],
        unreadable: true,
        documents: whole.documents,
        cache,
        problems: [
          {
            source,
            document: 0,
            name: undefined,
            message: `the file has ${whole.documents} documents, more than the limit of ${maxDocuments} (--max-manifest-documents): not used; split it into smaller files`,
          },
        ],
      };
    }
    return { ...whole, objects: [...whole.objects], problems: [...whole.problems], cache };
  }
  const problems: DocumentProblem[] = [];
  let offset = 0;
  for (const r of reads) {
    for (const p of r.problems) problems.push(offset === 0 ? p : { ...p, document: p.document + offset });
    offset += r.documents;
  }
  // The objects numbered in the file, made only when asked: the reading thread sends documents one
  // by one (numbered within themselves) and needs only their count.
  let objects: ParsedObject[] | undefined;
  return {
    get objects() {
      if (objects) return objects;
      objects = [];
      let at = 0;
      for (const r of reads) {
        for (const o of r.objects) objects.push(at === 0 ? o : { ...o, object: { ...o.object, document: o.object.document + at } });
        at += r.documents;
      }
      return objects;
    },
    objectCount: reads.reduce((n, r) => n + r.objects.length, 0),
    problems,
    unreadable: false,
    documents: offset,
    cache,
    pieces: (chunks ?? []).map((text, i) => ({ text, read: reads[i] as ChunkRead })),
  };
}
