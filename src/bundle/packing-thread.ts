// The packing thread's entry (packing.ts starts it): bundle hashing and packing, nothing else loaded.
import { serveTasks } from '../work/index.ts';
import { type PackAnswer, type PackRequest, packingTasks } from './packing.ts';

serveTasks<PackRequest, PackAnswer, never>(packingTasks(), (answer) =>
  answer.kind === 'pack' ? [answer.bytes.buffer as ArrayBuffer] : [],
);
