// Loaded into the measured service with `--import` (and `--expose-gc`) by bench/memory.ts: answers
// the benchmark over the IPC channel, so the service needs no debug hook of its own. `measure` runs
// full collections and reports the process's memory and each thread's heap; `snapshot` writes a V8
// heap snapshot of every thread. Worker threads load this file too: they answer the main thread over
// a BroadcastChannel.
import { getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { BroadcastChannel, isMainThread, threadId, threadName } from 'node:worker_threads';

/** One thread's heap after full collections. */
export interface ThreadHeap {
  readonly thread: string;
  readonly heapUsed: number;
  readonly heapTotal: number;
}

/**
 * What `measure` answers: bytes after ordinary full collections (what the process holds at rest,
 * V8's heap still as large as loading made it), then `low`: RSS and heap total after V8's
 * low-memory collection in every thread (what the process needs).
 */
export interface Measured {
  readonly low: { readonly rss: number; readonly heapTotal: number; readonly workersTotal: number };
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly arrayBuffers: number;
  /** Worker threads' heaps (the main thread's is heapUsed and heapTotal). */
  readonly workers: readonly ThreadHeap[];
  /** The main thread's heap by V8 space: committed and used bytes (new_space, old_space, code_space...). */
  readonly spaces: readonly { readonly name: string; readonly committed: number; readonly used: number }[];
}

type Request =
  | { readonly id: number; readonly cmd: 'measure' | 'shrink' }
  | { readonly id: number; readonly cmd: 'snapshot'; readonly path: string };
type ThreadReply = { readonly id: number; readonly heap?: ThreadHeap; readonly file?: string };

/** How long the main thread collects its workers' answers (a thread collecting a large heap on a busy machine takes seconds). */
const WORKERS_MS = 5000;

function collect(low = false): void {
  const gc = (globalThis as { gc?: (options?: { type: 'major'; execution: 'sync'; flavor?: 'last-resort' }) => void }).gc;
  if (!gc) throw new Error('bench/memory/probe.ts needs --expose-gc');
  // Twice: the first collection's finalisers and weak callbacks free more for the second. The
  // last-resort flavour is V8's low-memory collection: it also shrinks the young generation and
  // gives pooled pages back, so RSS reads what the heap holds rather than how large it once grew.
  gc({ type: 'major', execution: 'sync' });
  gc({ type: 'major', execution: 'sync', ...(low ? { flavor: 'last-resort' as const } : {}) });
}

function heap(): ThreadHeap {
  const s = getHeapStatistics();
  return { thread: threadName || `thread ${threadId}`, heapUsed: s.used_heap_size, heapTotal: s.total_heap_size };
}

const channel = new BroadcastChannel('acl-bench-memory-probe');
channel.unref();

if (!isMainThread) {
  channel.onmessage = (event: unknown) => {
    const raw = (event as { data: Request }).data;
    if (!('cmd' in raw)) return;
    collect(raw.cmd === 'shrink');
    const reply: ThreadReply =
      raw.cmd !== 'snapshot'
        ? { id: raw.id, heap: heap() }
        : { id: raw.id, file: writeHeapSnapshot(raw.path.replace(/\.heapsnapshot$/, `-${threadId}.heapsnapshot`)) };
    channel.postMessage(reply);
  };
} else if (process.send) {
  /** Asks every worker thread; gathers `expected` answers, or what answers within `waitMs`. */
  const workers = (request: Request, waitMs: number, expected = Number.POSITIVE_INFINITY): Promise<ThreadReply[]> =>
    new Promise((resolve) => {
      const got: ThreadReply[] = [];
      if (expected === 0) {
        resolve(got);
        return;
      }
      const timer = setTimeout(() => resolve(got), waitMs);
      channel.onmessage = (event: unknown) => {
        const reply = (event as { data: ThreadReply }).data;
        if (reply.id !== request.id || 'cmd' in reply) return;
        got.push(reply);
        if (got.length < expected) return;
        clearTimeout(timer);
        resolve(got);
      };
      channel.postMessage(request);
    });
  process.on('message', async (raw: Request) => {
    if (typeof raw !== 'object' || raw === null || !('cmd' in raw)) return;
    // How many threads there are is learnt from who answers a measure; a snapshot takes longer.
    const others =
      raw.cmd === 'measure'
        ? await workers(raw, WORKERS_MS)
        : await workers(raw, 300_000, (await workers({ id: -raw.id, cmd: 'measure' }, WORKERS_MS)).length);
    collect();
    let reply: unknown;
    if (raw.cmd === 'measure') {
      const m = process.memoryUsage();
      const spaces = getHeapSpaceStatistics().map((sp) => ({ name: sp.space_name, committed: sp.space_size, used: sp.space_used_size }));
      const shrunk = await workers({ id: -raw.id, cmd: 'shrink' }, 300_000, others.length);
      collect(true);
      reply = {
        rss: m.rss,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
        workers: others.flatMap((o) => (o.heap ? [o.heap] : [])),
        spaces,
        low: {
          rss: process.memoryUsage.rss(),
          heapTotal: getHeapStatistics().total_heap_size,
          workersTotal: shrunk.reduce((a, o) => a + (o.heap?.heapTotal ?? 0), 0),
        },
      } satisfies Measured;
    } else if (raw.cmd === 'snapshot') reply = [writeHeapSnapshot(raw.path), ...others.flatMap((o) => (o.file ? [o.file] : []))];
    process.send?.({ id: raw.id, reply });
  });
  // The channel must not keep the service alive once it is asked to stop.
  process.channel?.unref();
}
