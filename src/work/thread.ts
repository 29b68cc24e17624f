// The inside of a background thread (pool.ts starts it): tasks run in the order they arrive, each
// sending parts of its answer ahead of the end, at a lower CPU priority than the event loop.
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';

/** Takes this thread's tasks: `run` answers one (`send` posts a part ahead of it); `transfer` names buffers to move, not copy. */
export function serveTasks<R, A, P>(
  run: (request: R, send: (part: P) => void) => A | Promise<A>,
  transfer: (answer: A) => readonly ArrayBuffer[] = () => [],
): void {
  const port = parentPort;
  if (!port) throw new Error('a src/work thread script runs only as a worker thread');
  // Background work yields the CPU to the thread answering decisions: on Linux the nice value is per
  // thread, so this lowers only this one (nice 10: about a tenth of a contended core).
  try {
    setPriority(10);
  } catch {
    // Not permitted here (some containers): equal priority, still off the event loop.
  }
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (m: { id: number; request: R }) => {
    queue = queue.then(async () => {
      try {
        const answer = await run(m.request, (part) => port.postMessage({ id: m.id, part }));
        port.postMessage({ id: m.id, answer }, [...transfer(answer)]);
      } catch (err) {
        port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
      }
    });
  });
}
