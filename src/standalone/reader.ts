// Reading manifest files in a background thread (src/work): the file is read, hashed and parsed
// there, one document at a time with a cache of the documents' texts, and its objects come back in
// parts of a few hundred, so neither a large file nor a large edit holds the event loop.
import type { WorkerThread } from '../work/pool.ts';
import type { ManifestRead, ParsedObject } from './parse.ts';

export interface ManifestLimits {
  /** Largest file read, in bytes (--max-manifest-bytes). */
  readonly maxBytes: number;
  /** Most YAML documents in one file (--max-manifest-documents). */
  readonly maxDocuments: number;
}

export const DEFAULT_MANIFEST_LIMITS: ManifestLimits = { maxBytes: 8 * 1024 * 1024, maxDocuments: 20_000 };

export interface ManifestReader {
  read(file: string, source: string): Promise<{ read: ManifestRead; objects: ParsedObject[] }>;
}

export function createThreadReader(thread: WorkerThread, limits: ManifestLimits): ManifestReader {
  return {
    async read(file, source) {
      const objects: ParsedObject[] = [];
      const answer = await thread.run(
        { kind: 'read', file, source, maxBytes: limits.maxBytes, maxDocuments: limits.maxDocuments },
        { onPart: (part) => { objects.push(...part.objects); } },
      );
      if (answer.kind !== 'read') throw new Error(`the reading thread answered ${answer.kind} to read`);
      if (objects.length !== answer.read.objects) throw new Error(`the reading thread sent ${objects.length} of ${answer.read.objects} objects of ${source}`);
      return { read: answer.read, objects };
    },
  };
}
