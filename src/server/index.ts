export { listenOps, type Listening } from './listeners.ts';
export { startServing, type Serving } from './serving.ts';
