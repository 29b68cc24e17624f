// The tasks a background thread runs (worker.ts), as plain functions that also run in-thread:
// hashing and packing a bundle, and reading one manifest file. Requests and answers are plain data
// (structured clone), so the same code serves both.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { packBundleFiles } from '../bundle/index.ts';
import type { PieceCache } from '../bundle/gzip.ts';
import { parseManifest, type ManifestRead, type ParsedObject, type ParseCache } from '../standalone/parse.ts';

export type TaskRequest =
  /** `keep`: the thread keeps the text under this number, so a pack can name it instead of sending it again. */
  | { readonly kind: 'hash'; readonly text: string | readonly string[]; readonly keep?: number }
  /** `rego`: the text, or the number a hash kept it under (an error if no longer kept). */
  | { readonly kind: 'pack'; readonly manifest: string; readonly rego: string | readonly string[] | number }
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

export type TaskAnswer =
  | { readonly kind: 'hash'; readonly hex: string }
  | { readonly kind: 'pack'; readonly bytes: Uint8Array; readonly hex: string }
  | { readonly kind: 'read'; readonly read: ManifestRead }
  | { readonly kind: 'forget' };

/**
 * A read's content, sent ahead of its answer in batches: objects of a file parsed whole (numbered
 * in the file), or the file's documents in order, each new (numbered within itself) or a reference
 * to the document at that place in the previous answer for the file.
 */
export type TaskPart =
  | { readonly kind: 'objects'; readonly objects: readonly ParsedObject[] }
  | { readonly kind: 'pieces'; readonly pieces: readonly Piece[] };

export type Piece = { readonly reuse: number } | { readonly objects: readonly ParsedObject[]; readonly documents: number };

/** Texts kept at most (the oldest go first). */
const KEPT_TEXTS = 4;

/** Objects per part: each part is deserialised on the event loop in well under a millisecond. */
export const OBJECTS_PER_PART = 200;

/** What the thread keeps of a file between reads. */
export interface FileMemo {
  /** Parsed documents by text, so an edit re-parses only what changed. */
  readonly cache: ParseCache;
  /** The documents' texts as last sent, by place (undefined: last sent whole). */
  readonly sent: ReadonlyMap<string, number> | undefined;
}

export interface TaskContext {
  readonly files: Map<string, FileMemo>;
  /** Compressed pieces of the bundles this thread packed (bundle/gzip.ts). */
  readonly pieces: PieceCache;
  /** Texts kept by a hash request for the pack that follows it. */
  readonly kept: Map<number, string>;
  readonly send: (part: TaskPart) => void;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

async function readManifestFile(request: Extract<TaskRequest, { kind: 'read' }>, ctx: TaskContext): Promise<ManifestRead> {
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
  const hash = sha256Hex(bytes);
  if (changing) return { stamp, hash, changing: true, objects: 0, unreadable: false, documents: 0, problems: [] };
  const memo = ctx.files.get(file);
  const parsed = parseManifest(bytes.toString('utf8'), source, maxDocuments, memo?.cache);
  const sent = request.fresh ? undefined : memo?.sent;
  if (!parsed.pieces) {
    ctx.files.set(file, { cache: parsed.cache, sent: undefined });
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
  ctx.files.set(file, { cache: parsed.cache, sent: new Map(parsed.pieces.map((p, i) => [p.text, i])) });
  let batch: Piece[] = [];
  let inBatch = 0;
  for (const p of parsed.pieces) {
    const at = sent?.get(p.text);
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
    objects: parsed.objects.length,
    unreadable: false,
    documents: parsed.documents,
    problems: parsed.problems,
    layout: 'pieces',
  };
}

export async function runTask(request: TaskRequest, ctx: TaskContext): Promise<TaskAnswer> {
  switch (request.kind) {
    case 'hash': {
      const text = typeof request.text === 'string' ? request.text : request.text.join('');
      if (request.keep !== undefined) {
        ctx.kept.set(request.keep, text);
        // A few texts at most: each is a bundle's policy.rego, up to tens of megabytes.
        for (const key of ctx.kept.keys()) if (ctx.kept.size > KEPT_TEXTS) ctx.kept.delete(key);
      }
      return { kind: 'hash', hex: sha256Hex(text) };
    }
    case 'pack': {
      const rego =
        typeof request.rego === 'number'
          ? ctx.kept.get(request.rego)
          : typeof request.rego === 'string'
            ? request.rego
            : request.rego.join('');
      if (rego === undefined) throw new Error(`text ${String(request.rego)} is no longer kept`);
      const bytes = await packBundleFiles(request.manifest, rego, ctx.pieces);
      return { kind: 'pack', bytes, hex: sha256Hex(bytes) };
    }
    case 'read':
      return { kind: 'read', read: await readManifestFile(request, ctx) };
    case 'forget':
      for (const file of request.files) ctx.files.delete(file);
      return { kind: 'forget' };
  }
}
