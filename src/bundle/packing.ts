// Bundle hashing and packing in the packing thread (packing-thread.ts): the same bytes as in-thread
// (the same functions run there), without holding the event loop for the tens of milliseconds a
// large bundle's gzip takes. Small bundles are packed in-thread: the round trip would cost more.
// Requests and answers are plain data (structured clone); the offline commands run the same tasks
// inline (work/inline.ts).
import { createInlineThread, createWorkerThread, scriptBeside, type WorkerThread } from '../work/index.ts';
import { IN_THREAD_PACKER, joinText, packBundleFiles, sha256, textLength, type BundlePacker, type Text } from './bundle.ts';
import { createPieceCache, type PieceCache } from './gzip.ts';

export type PackRequest =
  /** `keep`: the thread keeps the text under this number, so a pack can name it instead of sending it again. */
  | { readonly kind: 'hash'; readonly text: Text; readonly keep?: number }
  /** `rego`: the text, or the number a hash kept it under (an error if no longer kept). */
  | { readonly kind: 'pack'; readonly manifest: string; readonly rego: Text | number; readonly signatures?: string | undefined };

export type PackAnswer =
  | { readonly kind: 'hash'; readonly hex: string }
  | { readonly kind: 'pack'; readonly bytes: Uint8Array; readonly hex: string };

/** The packing thread, or its tasks run inline. Packing sends no parts ahead of its answer. */
export type PackingThread = WorkerThread<PackRequest, PackAnswer, never>;

/** Texts kept at most (the oldest go first). */
const KEPT_TEXTS = 4;

/** What a packing thread keeps between tasks. */
interface PackingMemo {
  /** Compressed pieces of the bundles this thread packed (gzip.ts). */
  readonly pieces: PieceCache;
  /** Texts kept by a hash request for the pack that follows it. */
  readonly kept: Map<number, string>;
}

/** One packing task, as the thread's entry and the inline thread run it. */
export function packingTasks(): (request: PackRequest) => Promise<PackAnswer> {
  const memo: PackingMemo = { pieces: createPieceCache(), kept: new Map() };
  return async (request) => {
    if (request.kind === 'hash') {
      const text = joinText(request.text);
      if (request.keep !== undefined) {
        memo.kept.set(request.keep, text);
        // A few texts at most: each is a bundle's policy.rego, up to tens of megabytes.
        for (const key of memo.kept.keys()) if (memo.kept.size > KEPT_TEXTS) memo.kept.delete(key);
      }
      return { kind: 'hash', hex: sha256(text) };
    }
    const rego = typeof request.rego === 'number' ? memo.kept.get(request.rego) : joinText(request.rego);
    if (rego === undefined) throw new Error(`text ${String(request.rego)} is no longer kept`);
    const bytes = await packBundleFiles(request.manifest, rego, request.signatures, memo.pieces);
    return { kind: 'pack', bytes, hex: sha256(bytes) };
  };
}

/** The packing thread ('acl-bundles'), or its tasks on this thread when `inline` (a command that builds once and exits). */
export function createPackingThread(inline = false): PackingThread {
  return inline
    ? createInlineThread(packingTasks())
    : createWorkerThread('acl-bundles', { script: scriptBeside(import.meta.url, 'packing-thread') });
}

/** Texts shorter than this (UTF-16 units) are hashed and packed in this thread. */
export const IN_THREAD_BELOW = 64 * 1024;

/** A packer that sends large texts to `thread`. */
export function createThreadPacker(thread: PackingThread, below = IN_THREAD_BELOW): BundlePacker {
  // A text hashed in the thread is kept there: the pack that usually follows names it instead of
  // copying megabytes across again. Texts are matched by identity (the parts array or string).
  const keptAs = new WeakMap<object, number>();
  let lastString: { text: string; id: number } | undefined;
  let nextId = 1;
  const idOf = (text: Text): number | undefined =>
    typeof text === 'string' ? (lastString?.text === text ? lastString.id : undefined) : keptAs.get(text);
  return {
    async hash(text) {
      if (textLength(text) < below) return IN_THREAD_PACKER.hash(text);
      const keep = nextId++;
      const answer = await thread.run({ kind: 'hash', text, keep });
      if (answer.kind !== 'hash') throw new Error(`the packing thread answered ${answer.kind} to hash`);
      if (typeof text === 'string') lastString = { text, id: keep };
      else keptAs.set(text, keep);
      return answer.hex;
    },
    async pack(manifest, rego, signatures) {
      if (textLength(rego) < below) return IN_THREAD_PACKER.pack(manifest, rego, signatures);
      const id = idOf(rego);
      let answer: PackAnswer;
      try {
        answer = await thread.run({ kind: 'pack', manifest, rego: id ?? rego, signatures });
      } catch (err) {
        // The thread restarted or let the text go: send it.
        if (id === undefined) throw err;
        answer = await thread.run({ kind: 'pack', manifest, rego, signatures });
      }
      if (answer.kind !== 'pack') throw new Error(`the packing thread answered ${answer.kind} to pack`);
      return { bytes: answer.bytes, hex: answer.hex };
    },
  };
}
