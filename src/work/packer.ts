// Bundle hashing and packing in a background thread: the same bytes as in-thread (the same
// functions run there), without holding the event loop for the tens of milliseconds a large
// bundle's gzip takes. Small bundles are packed in-thread: the round trip would cost more.
import { IN_THREAD_PACKER, type BundlePacker } from '../bundle/index.ts';
import type { WorkerThread } from './pool.ts';

/** Texts shorter than this (UTF-16 units) are hashed and packed in this thread. */
export const IN_THREAD_BELOW = 64 * 1024;

export function createThreadPacker(thread: WorkerThread, below = IN_THREAD_BELOW): BundlePacker {
  return {
    async hash(text) {
      if (text.length < below) return IN_THREAD_PACKER.hash(text);
      const answer = await thread.run({ kind: 'hash', text });
      if (answer.kind !== 'hash') throw new Error(`the packing thread answered ${answer.kind} to hash`);
      return answer.hex;
    },
    async pack(manifest, rego) {
      if (rego.length < below) return IN_THREAD_PACKER.pack(manifest, rego);
      const answer = await thread.run({ kind: 'pack', manifest, rego });
      if (answer.kind !== 'pack') throw new Error(`the packing thread answered ${answer.kind} to pack`);
      return { bytes: answer.bytes, hex: answer.hex };
    },
  };
}
