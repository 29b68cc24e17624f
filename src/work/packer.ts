// Bundle hashing and packing in a background thread: the same bytes as in-thread (the same
// functions run there), without holding the event loop for the tens of milliseconds a large
// bundle's gzip takes. Small bundles are packed in-thread: the round trip would cost more.
import { IN_THREAD_PACKER, textLength, type BundlePacker, type Text } from '../bundle/index.ts';
import type { WorkerThread } from './pool.ts';
import type { TaskAnswer } from './tasks.ts';

/** Texts shorter than this (UTF-16 units) are hashed and packed in this thread. */
export const IN_THREAD_BELOW = 64 * 1024;

export function createThreadPacker(thread: WorkerThread, below = IN_THREAD_BELOW): BundlePacker {
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
    async pack(manifest, rego) {
      if (textLength(rego) < below) return IN_THREAD_PACKER.pack(manifest, rego);
      const id = idOf(rego);
      let answer: TaskAnswer;
      try {
        answer = await thread.run({ kind: 'pack', manifest, rego: id ?? rego });
      } catch (err) {
        // The thread restarted or let the text go: send it.
        if (id === undefined) throw err;
        answer = await thread.run({ kind: 'pack', manifest, rego });
      }
      if (answer.kind !== 'pack') throw new Error(`the packing thread answered ${answer.kind} to pack`);
      return { bytes: answer.bytes, hex: answer.hex };
    },
  };
}
