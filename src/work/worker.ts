// The background thread's entry (pool.ts starts it): runs tasks in the order they arrive.
import { parentPort } from 'node:worker_threads';
import { runTask, type TaskRequest } from './tasks.ts';

const port = parentPort;
if (!port) throw new Error('src/work/worker.ts runs only as a worker thread');
const cache: Parameters<typeof runTask>[1]['cache'] = new Map();
let queue: Promise<void> = Promise.resolve();
port.on('message', (m: { id: number; request: TaskRequest }) => {
  queue = queue.then(async () => {
    try {
      const answer = await runTask(m.request, { cache, send: (part) => port.postMessage({ id: m.id, part }) });
      port.postMessage({ id: m.id, answer }, answer.kind === 'pack' ? [answer.bytes.buffer as ArrayBuffer] : []);
    } catch (err) {
      port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
    }
  });
});
