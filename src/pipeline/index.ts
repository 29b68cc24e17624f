export { buildOffline, type Offline } from './offline.ts';
export { createPipeline, type Pipeline } from './pipeline.ts';
