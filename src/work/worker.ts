// The background thread's entry (pool.ts starts it): runs tasks in the order they arrive.
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { createPieceCache } from '../bundle/gzip.ts';
import { runTask, type TaskRequest } from './tasks.ts';

const port = parentPort;
if (!port) throw new Error('src/work/worker.ts runs only as a worker thread');
// Background work yields the CPU to the thread answering decisions: on Linux the nice value is per
// thread, so this lowers only this one (nice 10: about a tenth of a contended core). Where it is not allowed, it runs as is.
try {
  setPriority(10);
} catch {
  // Not permitted here (some containers): equal priority, still off the event loop.
}
const files: Parameters<typeof runTask>[1]['files'] = new Map();
const pieces = createPieceCache();
const kept = new Map<number, string>();
let queue: Promise<void> = Promise.resolve();
port.on('message', (m: { id: number; request: TaskRequest }) => {
  queue = queue.then(async () => {
    try {
      const answer = await runTask(m.request, { files, pieces, kept, send: (part) => port.postMessage({ id: m.id, part }) });
      port.postMessage({ id: m.id, answer }, answer.kind === 'pack' ? [answer.bytes.buffer as ArrayBuffer] : []);
    } catch (err) {
      port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
    }
  });
});
