// Loaded into the measured service with `--import` (and `--expose-gc`) by bench/memory.ts: answers
// the benchmark over the IPC channel, so the service needs no debug hook of its own. `measure` runs
// full collections and reports the process's memory; `snapshot` writes a V8 heap snapshot. Only the
// main thread answers (worker threads load this file too, and have no channel).
import { getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { isMainThread } from 'node:worker_threads';

/** What `measure` answers: bytes after full collections. */
export interface Measured {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly arrayBuffers: number;
  readonly mallocedMemory: number;
}

type Request = { readonly id: number; readonly cmd: 'measure' } | { readonly id: number; readonly cmd: 'snapshot'; readonly path: string };

function collect(): void {
  const gc = (globalThis as { gc?: (options?: { type: 'major'; execution: 'sync' }) => void }).gc;
  if (!gc) throw new Error('bench/memory/probe.ts needs --expose-gc');
  // Twice: the first collection's finalisers and weak callbacks free more for the second.
  gc({ type: 'major', execution: 'sync' });
  gc({ type: 'major', execution: 'sync' });
}

if (isMainThread && process.send) {
  process.on('message', (raw: Request) => {
    if (typeof raw !== 'object' || raw === null || !('cmd' in raw)) return;
    let reply: unknown;
    if (raw.cmd === 'measure') {
      collect();
      const m = process.memoryUsage();
      reply = {
        rss: m.rss,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
        mallocedMemory: getHeapStatistics().malloced_memory,
      } satisfies Measured;
    } else reply = writeHeapSnapshot(raw.path);
    process.send?.({ id: raw.id, reply });
  });
  // The channel must not keep the service alive once it is asked to stop.
  process.channel?.unref();
}
