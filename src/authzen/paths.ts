// Where the AuthZEN 1.0 API answers, in one table: the routes, the hot-path dispatch and the
// metadata document all read it, so a path is spelled once.

/** Each AuthZEN endpoint: its path, and the name the metadata document gives its URL. */
export const AUTHZEN_ENDPOINTS = {
  evaluation: { path: '/access/v1/evaluation', metadataName: 'access_evaluation_endpoint' },
  evaluations: { path: '/access/v1/evaluations', metadataName: 'access_evaluations_endpoint' },
  search_subject: { path: '/access/v1/search/subject', metadataName: 'search_subject_endpoint' },
  search_resource: { path: '/access/v1/search/resource', metadataName: 'search_resource_endpoint' },
  search_action: { path: '/access/v1/search/action', metadataName: 'search_action_endpoint' },
} as const satisfies Record<string, { readonly path: `/access/v1/${string}`; readonly metadataName: string }>;

export type AuthzenEndpoint = keyof typeof AUTHZEN_ENDPOINTS;

/** The endpoints in table order (the order of the routes and of the metadata document). */
export const AUTHZEN_ENDPOINT_NAMES = Object.keys(AUTHZEN_ENDPOINTS) as readonly AuthzenEndpoint[];

/** The metadata document; `/<tenant>` after it names the per-tenant form of every endpoint. */
export const AUTHZEN_METADATA_PATH = '/.well-known/authzen-configuration';
