// OPA's uploads are read in a thread of their own ('acl-uploads', uploads-worker.ts), not in the
// packing or reading thread, so bundle packing and manifest reading never queue behind an attacker.
// The thread takes one upload at a time: when a body ends it, the upload it was reading is answered
// and the others go to the next thread, started on demand. Its V8 resource limits are a backstop,
// not the bound: reaching them can still abort the whole process (nodejs/node#47224), so what an
// upload may cost is bounded before it is parsed (fleet/scan.ts) and the limits sit far above that.
//
// Except the small and plain, read on the event loop while they take it less than a quarter of its
// time: at most 128 KiB once inflated, and few enough arrays, objects and keys that JSON.parse takes
// a millisecond or so (fleet/body.ts). Sending one to the thread and back cost more than reading it:
// on the fleet benchmark's VM, 300 to 400 µs a status report when they come 10 ms apart, where
// parsing it costs 100. Anything larger, deeper, wider or past the budget goes to the thread.
import { readSmallUpload, type UploadAnswer, type UploadPart, type UploadReader, type UploadRequest } from '../fleet/index.ts';
import { createWorkerThread, scriptBeside, threadStop } from './pool.ts';

export interface UploadThreadOptions {
  /** --max-upload-bytes: what one upload may inflate to, and so what the thread may need. */
  readonly maxUploadBytes: number;
  /** Told when the thread stopped under an upload (why); the next upload starts another. */
  readonly onStop?: (reason: string) => void;
  /** How long the thread waits for another upload before it ends (default IDLE_MS). */
  readonly idleMs?: number;
  /** Milliseconds a second the event loop may spend reading small uploads itself (default 250; 0: every upload in the thread). */
  readonly onLoopMsPerS?: number;
}

/** A thread idle this long ends (a fleet reports at least every long-polling timeout, 60 s in the generated configuration). */
export const IDLE_MS = 10_000;

/**
 * The event loop reads small uploads itself for at most this many milliseconds a second: the fleet
 * benchmark's 1,000 OPAs take it about 100 on its VM; uploads made to be slow to parse (2 to 4 ms
 * each, the worst that passes the scan) take no more than this from decisions, the rest waiting
 * for the thread.
 */
const ON_LOOP_MS_PER_S = 250;

/** Uploads read one after another in one turn of the event loop take it at most about this long before the rest go to the thread. */
const ON_LOOP_MS_PER_TURN = 2;

/**
 * How much of the event loop's time small uploads took, this second and this turn, and whether they
 * may take more: many arriving together are read in one turn, and a decision waits for all of them.
 */
function createLoopBudget(msPerSecond: number): { allows(): boolean; spent(ms: number): void } {
  let second = 0;
  let usedThisSecond = 0;
  let usedThisTurn = 0;
  let turnEnds = false;
  return {
    allows() {
      const now = Math.floor(performance.now() / 1000);
      if (now !== second) {
        second = now;
        usedThisSecond = 0;
      }
      return usedThisSecond < msPerSecond && usedThisTurn < ON_LOOP_MS_PER_TURN;
    },
    spent(ms) {
      usedThisSecond += ms;
      usedThisTurn += ms;
      if (!turnEnds) {
        turnEnds = true;
        setImmediate(() => {
          usedThisTurn = 0;
          turnEnds = false;
        });
      }
    },
  };
}

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
    script: scriptBeside('uploads-worker'),
    resourceLimits: uploadLimits(o.maxUploadBytes),
  });
  let closed = false;
  const budget = createLoopBudget(o.onLoopMsPerS ?? ON_LOOP_MS_PER_S);
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
      if (!closed && budget.allows()) {
        const started = performance.now();
        const small = readSmallUpload(request);
        budget.spent(performance.now() - started);
        if (small !== undefined) return Promise.resolve(small);
      }
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
