// The background thread's tasks run on the calling thread instead, in the same order and through the
// same functions (tasks.ts), parts delivered as they are sent. For a command that builds a folder
// once and exits (render, lint, test): starting two threads, each loading the modules again, costs
// more than the work they would take off an event loop nobody else is waiting on.
import { createPieceCache } from '../bundle/gzip.ts';
import type { WorkerThread } from './pool.ts';
import { runTask, type TaskAnswer, type TaskContext } from './tasks.ts';

export function createInlineThread(): WorkerThread {
  const context: Omit<TaskContext, 'send'> = { files: new Map(), pieces: createPieceCache(), kept: new Map() };
  let queue: Promise<unknown> = Promise.resolve();
  return {
    run(request, options) {
      const answer: Promise<TaskAnswer> = queue.then(() => runTask(request, { ...context, send: (part) => options?.onPart?.(part) }));
      queue = answer.catch(() => undefined);
      return answer;
    },
    async close() {
      await queue;
    },
  };
}
