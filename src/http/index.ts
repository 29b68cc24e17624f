export type { AdmissionDeps } from './admission.ts';
export { createApiHandler, createOpsApp } from './app.ts';
export type { FleetDeps } from './deps.ts';
export { createLongPolls, type LongPolls } from './longpoll.ts';
