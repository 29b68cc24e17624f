export { createApiApp, createApiHandler, createOpsApp, type OpsDeps } from './app.ts';
export { DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_WAIT_SECONDS, type ApiDeps, type FleetDeps } from './deps.ts';
export { createLongPolls, preferWait, type LongPolls } from './longpoll.ts';
export { BUNDLE_CONTENT_TYPE, noneMatch } from './bundles.ts';
export { decisionInputOf } from './request.ts';
export { AUTHZEN_ENDPOINTS, AUTHZEN_METADATA_PATH } from './paths.ts';
