// One background thread that runs tasks (src/work/tasks.ts) off the event loop: requests go in
// order, answers come back by id, a task may send parts of its answer ahead of the end (so a large
// answer is taken in slices, never in one long deserialisation). A thread that dies fails its
// pending tasks with the reason and is started again on the next call. The thread never keeps the
// process alive.
import { Worker } from 'node:worker_threads';
import type { TaskAnswer, TaskPart, TaskRequest } from './tasks.ts';

type Message = { id: number; part: TaskPart } | { id: number; answer: TaskAnswer } | { id: number; error: string };

interface Pending {
  /** The thread it was sent to: only that thread's end fails it. */
  readonly worker: Worker;
  readonly resolve: (answer: TaskAnswer) => void;
  readonly reject: (err: Error) => void;
  readonly onPart: ((part: TaskPart) => void) | undefined;
}

export interface WorkerThread {
  /** Runs a task in the thread; `onPart` gets the parts the task sends before its answer. */
  run(request: TaskRequest, options?: { transfer?: readonly ArrayBuffer[]; onPart?: (part: TaskPart) => void }): Promise<TaskAnswer>;
  /** Stops the thread; pending tasks fail. */
  close(): Promise<void>;
}

/** The worker script beside this module: `.ts` when running from source, `.js` once built. */
const SCRIPT = new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url);

export function createWorkerThread(name: string): WorkerThread {
  let worker: Worker | undefined;
  let nextId = 1;
  const pending = new Map<number, Pending>();

  const failAll = (w: Worker, reason: string): void => {
    for (const [id, p] of pending) {
      if (p.worker !== w) continue;
      pending.delete(id);
      p.reject(new Error(`the ${name} thread stopped: ${reason}`));
    }
  };
  const start = (): Worker => {
    const w = new Worker(SCRIPT, { name });
    w.unref();
    w.on('message', (m: Message) => {
      const p = pending.get(m.id);
      if (!p) return;
      if ('part' in m) {
        p.onPart?.(m.part);
        return;
      }
      pending.delete(m.id);
      if ('answer' in m) p.resolve(m.answer);
      else p.reject(new Error(m.error));
      if (pending.size === 0) w.unref();
    });
    w.on('error', (err) => {
      if (worker === w) worker = undefined;
      failAll(w, err.message);
    });
    w.on('exit', (code) => {
      if (worker === w) worker = undefined;
      failAll(w, `exit code ${code}`);
    });
    return w;
  };

  return {
    run(request, options = {}) {
      worker ??= start();
      const w = worker;
      const id = nextId++;
      return new Promise<TaskAnswer>((resolve, reject) => {
        pending.set(id, { worker: w, resolve, reject, onPart: options.onPart });
        // Referenced while a task runs, so a process waiting on it is not let go.
        w.ref();
        try {
          w.postMessage({ id, request }, [...(options.transfer ?? [])]);
        } catch (err) {
          // A request that cannot be sent (not cloneable) fails alone; the thread goes on.
          pending.delete(id);
          if (pending.size === 0) w.unref();
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    },
    async close() {
      const w = worker;
      worker = undefined;
      if (!w) return;
      await w.terminate();
      failAll(w, 'closed');
    },
  };
}
