// One background thread that runs tasks off the event loop: requests go in order, answers come
// back by id, a task may send parts of its answer ahead of the end (so a large answer is taken in
// slices, never in one long deserialisation). A thread that dies fails its pending tasks with the
// reason and is started again on the next call. The thread never keeps the process alive. What a
// thread runs is its owner's: the packing thread (bundle/), the reading thread (standalone/), the
// uploads thread (fleet/), each an entry script that serves its tasks with thread.ts.
import { Worker, type ResourceLimits } from 'node:worker_threads';

type Message<A, P> = { id: number; part: P } | { id: number; answer: A } | { id: number; error: string };

interface Pending<A, P> {
  /** The thread it was sent to: only that thread's end fails it. */
  readonly worker: Worker;
  readonly resolve: (answer: A) => void;
  readonly reject: (err: Error) => void;
  readonly onPart: ((part: P) => void) | undefined;
}

export interface WorkerThread<R, A, P> {
  /** Runs a task in the thread; `onPart` gets the parts the task sends before its answer. */
  run(request: R, options?: { transfer?: readonly ArrayBuffer[]; onPart?: (part: P) => void }): Promise<A>;
  /** Stops the thread; pending tasks fail. */
  close(): Promise<void>;
}

/** A thread's entry script beside the module at `moduleUrl` (its import.meta.url): `.ts` from source, `.js` once built. */
export const scriptBeside = (moduleUrl: string, name: string): URL =>
  new URL(`./${name}${moduleUrl.endsWith('.ts') ? '.ts' : '.js'}`, moduleUrl);

export interface ThreadOptions {
  /** The thread's entry script (scriptBeside). */
  readonly script: URL;
  /** V8 limits of the thread's heap and stack: reaching them ends the thread, not the process (at best: see uploads.ts). */
  readonly resourceLimits?: ResourceLimits;
}

/** Errors of tasks that failed because their thread stopped. */
const stops = new WeakMap<Error, string | undefined>();

/** For a task's failure: whether its thread stopped, and the code of the thread's error (ERR_WORKER_OUT_OF_MEMORY, ...). */
export function threadStop(err: unknown): { readonly code: string | undefined } | undefined {
  return err instanceof Error && stops.has(err) ? { code: stops.get(err) } : undefined;
}

/** A background thread; a task that fails because the thread stopped is told so by threadStop. */
export function createWorkerThread<R, A, P>(name: string, options: ThreadOptions): WorkerThread<R, A, P> {
  let worker: Worker | undefined;
  let nextId = 1;
  const pending = new Map<number, Pending<A, P>>();
  const script = options.script;

  const failAll = (w: Worker, reason: string, cause?: Error): void => {
    for (const [id, p] of pending) {
      if (p.worker !== w) continue;
      pending.delete(id);
      const err = new Error(`the ${name} thread stopped: ${reason}`, cause ? { cause } : {});
      stops.set(err, (cause as NodeJS.ErrnoException | undefined)?.code);
      p.reject(err);
    }
  };
  const start = (): Worker => {
    const w = new Worker(script, { name, ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}) });
    w.unref();
    w.on('message', (m: Message<A, P>) => {
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
      failAll(w, err.message, err);
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
      return new Promise<A>((resolve, reject) => {
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
