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

/** Each document's text → what reading it alone gave (document numbers from 1 within it). */
export type ParseCache = ReadonlyMap<string, ChunkRead>;

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
  objects: ParsedObject[];
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
      cache: new Map(),
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
  const cache = new Map<string, ChunkRead>();
  const reads = chunks?.map((chunk) => {
    const read = cache.get(chunk) ?? previous?.get(chunk) ?? readChunk(chunk, source);
    cache.set(chunk, read);
    return read;
  });
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
  const objects: ParsedObject[] = [];
  const problems: DocumentProblem[] = [];
  let offset = 0;
  for (const r of reads) {
    for (const o of r.objects) objects.push(offset === 0 ? o : { ...o, object: { ...o.object, document: o.object.document + offset } });
    for (const p of r.problems) problems.push(offset === 0 ? p : { ...p, document: p.document + offset });
    offset += r.documents;
  }
  return {
    objects,
    problems,
    unreadable: false,
    documents: offset,
    cache,
    pieces: (chunks ?? []).map((text, i) => ({ text, read: reads[i] as ChunkRead })),
  };
}
