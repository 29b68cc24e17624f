export { coalesce } from './coalesce.ts';
export { createInlineThread } from './inline.ts';
export { createWorkerThread, scriptBeside, threadStop, type WorkerThread } from './pool.ts';
export { createSlicer, drive, type Slicer } from './slice.ts';
export { serveTasks } from './thread.ts';
