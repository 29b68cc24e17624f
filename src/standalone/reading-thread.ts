// The reading thread's entry (reading.ts starts it): manifest files read, hashed and parsed, nothing else loaded.
import { serveTasks } from '../work/index.ts';
import { type ReadAnswer, type ReadPart, type ReadRequest, readingTasks } from './reading.ts';

serveTasks<ReadRequest, ReadAnswer, ReadPart>(readingTasks());
