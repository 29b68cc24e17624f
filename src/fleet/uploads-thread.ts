// OPA's uploads are read in a thread of their own ('acl-uploads', uploads-worker.ts), not in the
// packing or reading thread, so bundle packing and manifest reading never queue behind an attacker.
// The thread takes one upload at a time: when a body ends it, the upload it was reading is answered
// and the others go to the next thread, started on demand. Its V8 resource limits are a backstop,
// not the bound: reaching them can still abort the whole process (nodejs/node#47224), so what an
// upload may cost is bounded before it is parsed (fleet/scan.ts) and the limits sit far above that.
import { createWorkerThread, scriptBeside, threadStop } from '../work/index.ts';
import type { UploadAnswer, UploadPart, UploadReader, UploadRequest } from './intake.ts';

export interface UploadThreadOptions {
  /** --max-upload-bytes: what one upload may inflate to, and so what the thread may need. */
  readonly maxUploadBytes: number;
  /** Told when the thread stopped under an upload (why); the next upload starts another. */
  readonly onStop?: (reason: string) => void;
  /** How long the thread waits for another upload before it ends (default IDLE_MS). */
  readonly idleMs?: number;
}

/** A thread idle this long ends (a fleet reports at least every long-polling timeout, 60 s in the generated configuration). */
export const IDLE_MS = 10_000;

export interface UploadThread extends UploadReader {
  /** Stops the thread; uploads not yet answered are answered 503. */
  close(): Promise<void>;
}

const MIB = 1024 * 1024;

/**
 * The thread's limits. Reading an upload of B bytes that passed the scan took the thread at most
 * about 14 B in the costliest shapes measured (262,000 objects with a key each, 23,000 tiny decision
 * events: uploads.test.ts reads them): 64 MiB plus 16 times the upload limit leaves that twice over.
 * The stack fits a reviver 10,002 levels deep (fleet/json.ts keeps exact numbers with one).
 */
export function uploadLimits(maxUploadBytes: number): { maxOldGenerationSizeMb: number; stackSizeMb: number } {
  return { maxOldGenerationSizeMb: 64 + 16 * Math.ceil(maxUploadBytes / MIB), stackSizeMb: 8 };
}

/** A copy of `body` that owns its whole buffer, so the buffer can be moved to the thread. */
function ownBuffer(body: Uint8Array): Uint8Array<ArrayBuffer> {
  if (body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer)
    return body as Uint8Array<ArrayBuffer>;
  return new Uint8Array(body);
}

export function createUploadThread(o: UploadThreadOptions): UploadThread {
  const thread = createWorkerThread<UploadRequest, UploadAnswer, UploadPart>('acl-uploads', {
    script: scriptBeside(import.meta.url, 'uploads-worker'),
    resourceLimits: uploadLimits(o.maxUploadBytes),
  });
  let closed = false;
  let last: Promise<unknown> = Promise.resolve();
  let waiting = 0;
  let idle: NodeJS.Timeout | undefined;
  // A thread with nothing to read for a while ends: its memory (the bodies it inflated, its heap)
  // goes back, and the next upload starts another.
  const settled = (): void => {
    if (--waiting > 0 || closed) return;
    idle = setTimeout(() => void thread.close(), o.idleMs ?? IDLE_MS);
    idle.unref();
  };
  const failed = (err: unknown): UploadAnswer => {
    const stop = threadStop(err);
    if (!stop) throw err;
    if (closed) return { ok: false, code: 'unavailable', message: 'the service is stopping: retry later' };
    o.onStop?.(stop.code ?? (err as Error).message);
    return stop.code === 'ERR_WORKER_OUT_OF_MEMORY'
      ? { ok: false, code: 'too_large', message: 'reading the upload needed more memory than an upload may take (--max-upload-bytes)' }
      : { ok: false, code: 'unavailable', message: 'the upload could not be read now: retry later' };
  };
  return {
    read(request, onPart) {
      waiting++;
      clearTimeout(idle);
      const answer = last.then((): Promise<UploadAnswer> | UploadAnswer => {
        if (closed) return { ok: false, code: 'unavailable', message: 'the service is stopping: retry later' };
        const body = ownBuffer(request.body);
        return thread.run({ ...request, body }, { transfer: [body.buffer], ...(onPart ? { onPart } : {}) }).catch(failed);
      });
      last = answer.catch(() => undefined).finally(settled);
      return answer;
    },
    async close() {
      closed = true;
      clearTimeout(idle);
      await thread.close();
    },
  };
}
