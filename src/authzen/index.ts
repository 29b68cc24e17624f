export { evaluation, evaluations, metadata, search, type Reply, type TenantView } from './api.ts';
export { AUTHZEN_ENDPOINT_NAMES, AUTHZEN_ENDPOINTS, AUTHZEN_METADATA_PATH, type AuthzenEndpoint } from './paths.ts';
export { decisionInputOf, loggedInputOf } from './request.ts';
