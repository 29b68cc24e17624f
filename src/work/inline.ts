// A background thread's tasks run on the calling thread instead, in the same order and through the
// same function, parts delivered as they are sent. For a command that builds a folder once and exits
// (render, lint, test): starting two threads, each loading the modules again, costs more than the
// work they would take off an event loop nobody else is waiting on.
import type { WorkerThread } from './pool.ts';

/** `run` answers one task as the thread's entry would (`send` delivers a part ahead of the answer). */
export function createInlineThread<R, A, P>(run: (request: R, send: (part: P) => void) => Promise<A>): WorkerThread<R, A, P> {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    run(request, options) {
      const answer: Promise<A> = queue.then(() => run(request, (part) => options?.onPart?.(part)));
      queue = answer.catch(() => undefined);
      return answer;
    },
    async close() {
      await queue;
    },
  };
}
