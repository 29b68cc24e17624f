// The tasks a background thread runs (worker.ts), as plain functions that also run in-thread:
// hashing and packing a bundle, and reading one manifest file. Requests and answers are plain data
// (structured clone), so the same code serves both.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { packBundleFiles } from '../bundle/index.ts';
import { parseManifest, type ManifestRead, type ParsedObject, type ParseCache } from '../standalone/parse.ts';

export type TaskRequest =
  | { readonly kind: 'hash'; readonly text: string }
  | { readonly kind: 'pack'; readonly manifest: string; readonly rego: string }
  | { readonly kind: 'read'; readonly file: string; readonly source: string; readonly maxBytes: number; readonly maxDocuments: number };

export type TaskAnswer =
  | { readonly kind: 'hash'; readonly hex: string }
  | { readonly kind: 'pack'; readonly bytes: Uint8Array; readonly hex: string }
  | { readonly kind: 'read'; readonly read: ManifestRead };

/** Objects of a read, sent ahead of its answer in batches. */
export type TaskPart = { readonly kind: 'objects'; readonly objects: readonly ParsedObject[] };

/** Objects per part: each part is deserialised on the event loop in well under a millisecond. */
export const OBJECTS_PER_PART = 200;

export interface TaskContext {
  /** Parsed documents of each file, kept between reads so an edit re-parses only what changed. */
  readonly cache: Map<string, ParseCache>;
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
    ctx.cache.delete(file);
    return { stamp, hash: `size:${before.size}:${before.mtimeMs}`, changing: false, objects: 0, unreadable: true, documents: 0, problems: [{ source, document: 0, name: undefined, message: `the file is ${before.size} bytes, more than the limit of ${maxBytes} (--max-manifest-bytes): not read; split it into smaller files` }] };
  }
  const bytes = await readFile(file);
  const after = await stat(file);
  // A file that changed while it was read is caught mid-write: its bytes are not taken.
  const changing = after.ino !== before.ino || after.size !== before.size || after.mtimeMs !== before.mtimeMs || bytes.length !== before.size;
  const hash = sha256Hex(bytes);
  if (changing) return { stamp, hash, changing: true, objects: 0, unreadable: false, documents: 0, problems: [] };
  const parsed = parseManifest(bytes.toString('utf8'), source, maxDocuments, ctx.cache.get(file));
  ctx.cache.set(file, parsed.cache);
  for (let i = 0; i < parsed.objects.length; i += OBJECTS_PER_PART) ctx.send({ kind: 'objects', objects: parsed.objects.slice(i, i + OBJECTS_PER_PART) });
  return { stamp, hash, changing: false, objects: parsed.objects.length, unreadable: parsed.unreadable, documents: parsed.documents, problems: parsed.problems };
}

export async function runTask(request: TaskRequest, ctx: TaskContext): Promise<TaskAnswer> {
  switch (request.kind) {
    case 'hash': return { kind: 'hash', hex: sha256Hex(request.text) };
    case 'pack': {
      const bytes = await packBundleFiles(request.manifest, request.rego);
      return { kind: 'pack', bytes, hex: sha256Hex(bytes) };
    }
    case 'read': return { kind: 'read', read: await readManifestFile(request, ctx) };
  }
}
