// Reading manifest files in the reading thread (reading.ts), the event loop's side: the file is read,
// hashed and parsed there, one document at a time with a cache of the documents' texts, and its
// objects come back in parts of a few hundred, so neither a large file nor a large edit holds the
// event loop.
import type { ManifestRead, ParsedObject } from './parse.ts';
import type { Piece, ReadingThread } from './reading.ts';

export interface ManifestLimits {
  /** Largest file read, in bytes (--max-manifest-bytes). */
  readonly maxBytes: number;
  /** Most YAML documents in one file (--max-manifest-documents). */
  readonly maxDocuments: number;
}

export const DEFAULT_MANIFEST_LIMITS: ManifestLimits = { maxBytes: 8 * 1024 * 1024, maxDocuments: 20_000 };

export interface ManifestReader {
  read(file: string, source: string): Promise<{ read: ManifestRead; objects: ParsedObject[] }>;
  /** Files gone from the folder: what was kept of them (here and in the thread) is let go. */
  forget(files: readonly string[]): Promise<void>;
}

/** A file's documents as last received, each with its objects numbered in the file. */
interface Received {
  readonly objects: readonly ParsedObject[];
  readonly documents: number;
  readonly offset: number;
  /** `objects` with `offset` added to their document numbers. */
  readonly numbered: readonly ParsedObject[];
}

function numbered(objects: readonly ParsedObject[], offset: number): readonly ParsedObject[] {
  return offset === 0 ? objects : objects.map((o) => ({ ...o, object: { ...o.object, document: o.object.document + offset } }));
}

/**
 * Only the documents whose text changed cross between the threads: the others are references to
 * what this side kept of the file's last read (and keep their objects, so unchanged objects stay
 * the very same). A read that fails forgets the file on both sides.
 */
export function createThreadReader(thread: ReadingThread, limits: ManifestLimits): ManifestReader {
  const files = new Map<string, readonly Received[]>();
  return {
    async read(file, source) {
      const kept = files.get(file);
      files.delete(file);
      const whole: ParsedObject[] = [];
      const pieces: Piece[] = [];
      const answer = await thread.run(
        { kind: 'read', file, source, maxBytes: limits.maxBytes, maxDocuments: limits.maxDocuments, fresh: kept === undefined },
        {
          onPart: (part) => {
            if (part.kind === 'objects') whole.push(...part.objects);
            else pieces.push(...part.pieces);
          },
        },
      );
      if (answer.kind !== 'read') throw new Error(`the reading thread answered ${answer.kind} to read`);
      const { read } = answer;
      if (read.layout !== 'pieces') {
        if (whole.length !== read.objects)
          throw new Error(`the reading thread sent ${whole.length} of ${read.objects} objects of ${source}`);
        return { read, objects: whole };
      }
      const received: Received[] = [];
      let offset = 0;
      for (const p of pieces) {
        const from = 'reuse' in p ? kept?.[p.reuse] : undefined;
        if ('reuse' in p && !from)
          throw new Error(`the reading thread referred to document ${p.reuse} of ${source}, which this side does not hold`);
        const objects = from ? from.objects : (p as Extract<Piece, { objects: unknown }>).objects;
        const documents = from ? from.documents : (p as Extract<Piece, { objects: unknown }>).documents;
        received.push({ objects, documents, offset, numbered: from && from.offset === offset ? from.numbered : numbered(objects, offset) });
        offset += documents;
      }
      const objects = received.flatMap((r) => r.numbered);
      if (objects.length !== read.objects)
        throw new Error(`the reading thread sent ${objects.length} of ${read.objects} objects of ${source}`);
      files.set(file, received);
      return { read, objects };
    },
    async forget(gone) {
      for (const file of gone) files.delete(file);
      await thread.run({ kind: 'forget', files: gone });
    },
  };
}
