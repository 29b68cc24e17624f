// The packing and reading thread's entry (pool.ts starts it): bundle hashing and packing, manifest reading.
import { createPieceCache } from '../bundle/gzip.ts';
import { runTask, type TaskAnswer, type TaskPart, type TaskRequest } from './tasks.ts';
import { serveTasks } from './thread.ts';

const files: Parameters<typeof runTask>[1]['files'] = new Map();
const pieces = createPieceCache();
const kept = new Map<number, string>();
serveTasks<TaskRequest, TaskAnswer, TaskPart>(
  (request, send) => runTask(request, { files, pieces, kept, send }),
  (answer) => (answer.kind === 'pack' ? [answer.bytes.buffer as ArrayBuffer] : []),
);
