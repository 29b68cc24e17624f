// Reading one manifest file in the reading thread (reading-thread.ts; reader.ts is the event loop's
// side): read, hashed and parsed one document at a time with a cache of the documents' texts, its
// objects sent back in parts of a few hundred, so neither a large file nor a large edit holds the
// event loop. Requests and answers are plain data; the offline commands run the same tasks inline.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { createInlineThread, createWorkerThread, scriptBeside, type WorkerThread } from '../work/index.ts';
import { parseManifest, type ManifestRead, type ParsedObject, type ParseCache } from './parse.ts';

export type ReadRequest =
  /**
   * `fresh`: the caller holds nothing of this file, so every document is sent; otherwise a document
   * whose text is unchanged since the last answer is sent as a reference to its place in that answer.
   */
  | {
      readonly kind: 'read';
      readonly file: string;
      readonly source: string;
      readonly maxBytes: number;
      readonly maxDocuments: number;
      readonly fresh: boolean;
    }
  /** The files are gone from the folder: what the thread kept of them goes too. */
  | { readonly kind: 'forget'; readonly files: readonly string[] };

export type ReadAnswer = { readonly kind: 'read'; readonly read: ManifestRead } | { readonly kind: 'forget' };

/**
 * A read's content, sent ahead of its answer in batches: objects of a file parsed whole (numbered
 * in the file), or the file's documents in order, each new (numbered within itself) or a reference
 * to the document at that place in the previous answer for the file.
 */
export type ReadPart =
  | { readonly kind: 'objects'; readonly objects: readonly ParsedObject[] }
  | { readonly kind: 'pieces'; readonly pieces: readonly Piece[] };

export type Piece = { readonly reuse: number } | { readonly objects: readonly ParsedObject[]; readonly documents: number };

/** The reading thread, or its tasks run inline. */
export type ReadingThread = WorkerThread<ReadRequest, ReadAnswer, ReadPart>;

/** Objects per part: each part is deserialised on the event loop in well under a millisecond. */
export const OBJECTS_PER_PART = 200;

/** What the thread keeps of a file between reads. */
interface FileMemo {
  /** The last parse, so an edit re-parses only what changed. */
  readonly cache: ParseCache;
  /** Whether its documents were sent one by one (the other side holds them by place), not whole. */
  readonly sentPieces: boolean;
}

interface ReadingContext {
  readonly files: Map<string, FileMemo>;
  readonly send: (part: ReadPart) => void;
}

async function readManifestFile(request: Extract<ReadRequest, { kind: 'read' }>, ctx: ReadingContext): Promise<ManifestRead> {
  const { file, source, maxBytes, maxDocuments } = request;
  const before = await stat(file);
  const stamp = { ino: before.ino, size: before.size, mtimeMs: before.mtimeMs, ctimeMs: before.ctimeMs };
  if (before.size > maxBytes) {
    ctx.files.delete(file);
    return {
      stamp,
      hash: `size:${before.size}:${before.mtimeMs}`,
      changing: false,
      objects: 0,
      unreadable: true,
      documents: 0,
      problems: [
        {
          source,
          document: 0,
          name: undefined,
          message: `the file is ${before.size} bytes, more than the limit of ${maxBytes} (--max-manifest-bytes): not read; split it into smaller files`,
        },
      ],
    };
  }
  const bytes = await readFile(file);
  const after = await stat(file);
  // A file that changed while it was read is caught mid-write: its bytes are not taken.
  const changing =
    after.ino !== before.ino || after.size !== before.size || after.mtimeMs !== before.mtimeMs || bytes.length !== before.size;
  const hash = createHash('sha256').update(bytes).digest('hex');
  if (changing) return { stamp, hash, changing: true, objects: 0, unreadable: false, documents: 0, problems: [] };
  const memo = ctx.files.get(file);
  const parsed = parseManifest(bytes.toString('utf8'), source, maxDocuments, memo?.cache);
  // The place of each document's read in the last answer: a read is reused only for the same text,
  // so the reads themselves say which documents the other side already holds (no text is hashed).
  const sent = !request.fresh && memo?.sentPieces ? new Map(memo.cache.pieces.map((p, i) => [p.read, i])) : undefined;
  if (!parsed.pieces) {
    ctx.files.set(file, { cache: parsed.cache, sentPieces: false });
    for (let i = 0; i < parsed.objects.length; i += OBJECTS_PER_PART)
      ctx.send({ kind: 'objects', objects: parsed.objects.slice(i, i + OBJECTS_PER_PART) });
    return {
      stamp,
      hash,
      changing: false,
      objects: parsed.objects.length,
      unreadable: parsed.unreadable,
      documents: parsed.documents,
      problems: parsed.problems,
      layout: 'whole',
    };
  }
  ctx.files.set(file, { cache: parsed.cache, sentPieces: true });
  let batch: Piece[] = [];
  let inBatch = 0;
  for (const p of parsed.pieces) {
    const at = sent?.get(p.read);
    batch.push(at === undefined ? { objects: p.read.objects, documents: p.read.documents } : { reuse: at });
    inBatch += at === undefined ? Math.max(1, p.read.objects.length) : 0;
    if (inBatch >= OBJECTS_PER_PART || batch.length >= 20 * OBJECTS_PER_PART) {
      ctx.send({ kind: 'pieces', pieces: batch });
      batch = [];
      inBatch = 0;
    }
  }
  if (batch.length > 0) ctx.send({ kind: 'pieces', pieces: batch });
  return {
    stamp,
    hash,
    changing: false,
    objects: parsed.objectCount ?? parsed.objects.length,
    unreadable: false,
    documents: parsed.documents,
    problems: parsed.problems,
    layout: 'pieces',
  };
}

/** The reading tasks, as the thread's entry and the inline thread run them (one memo of files per thread). */
export function readingTasks(): (request: ReadRequest, send: (part: ReadPart) => void) => Promise<ReadAnswer> {
  const files = new Map<string, FileMemo>();
  return async (request, send) => {
    if (request.kind === 'read') return { kind: 'read', read: await readManifestFile(request, { files, send }) };
    for (const file of request.files) files.delete(file);
    return { kind: 'forget' };
  };
}

/** The reading thread ('acl-manifests'), or its tasks on this thread when `inline` (a command that builds once and exits). */
export function createReadingThread(inline = false): ReadingThread {
  return inline
    ? createInlineThread(readingTasks())
    : createWorkerThread('acl-manifests', { script: scriptBeside(import.meta.url, 'reading-thread') });
}
