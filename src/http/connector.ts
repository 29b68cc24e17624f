// The connector token, checked the one way for every OPA-facing endpoint (bundles, status reports,
// decision logs): service spec 5 and 7.2. 401 for a missing, unknown, rotated or revoked token;
// 404 for a token of another connector or tenant (a token never learns what else exists); 403 for
// an Inactive connector. And which of the bundles a report names are the connector's.
import { hashesEqual, hashToken, parseBearer } from '../auth/index.ts';
import { ownedBundles, type Owned } from '../fleet/index.ts';
import type { ConnectorEntry, Snapshot } from '../store/index.ts';
import type { FailureCode } from './errors.ts';

export interface ConnectorPath {
  readonly tenant: string;
  readonly connector: string;
}

export type ConnectorVerdict =
  | { readonly code: 'ok'; readonly connector: ConnectorEntry }
  /** `retired`: the token is one this connector had before (rotated or revoked): still a 401. */
  | { readonly code: 'unauthenticated'; readonly message: string; readonly retired: ConnectorEntry | undefined }
  | { readonly code: 'forbidden'; readonly message: string; readonly connector: ConnectorEntry }
  | { readonly code: Exclude<FailureCode, 'unauthenticated' | 'forbidden'>; readonly message: string };

/** Who a connector token is, for a request to `path`. */
export function judgeConnector(snapshot: Snapshot, path: ConnectorPath, authorization: string | undefined): ConnectorVerdict {
  const token = parseBearer(authorization);
  if (token === undefined)
    return { code: 'unauthenticated', message: 'a connector token is required: Authorization: Bearer agent_...', retired: undefined };
  // One hash per request: the lookup finds the candidate, the constant-time comparison confirms it.
  const hash = hashToken(token);
  const connector = snapshot.tokens.get(hash);
  if (!connector?.tokenHash || !hashesEqual(connector.tokenHash, hash)) {
    const retired = snapshot.retiredTokens.get(hash);
    return {
      code: 'unauthenticated',
      message: 'the token is not valid (unknown, rotated or revoked)',
      retired: retired && retired.tenant === path.tenant && retired.name === path.connector ? retired : undefined,
    };
  }
  // A token opens only its own connector: anything else is "not found", never a hint that it exists.
  if (connector.tenant !== path.tenant || connector.name !== path.connector) {
    return { code: 'not_found', message: `no connector ${path.connector} in tenant ${path.tenant} for this token` };
  }
  if (!connector.active) return { code: 'forbidden', message: `connector ${path.connector} is Inactive`, connector };
  return { code: 'ok', connector };
}

/** The report's bundles that are this connector's in `snapshot`; a bundle of another connector refuses it. */
export function bundlesOf(snapshot: Snapshot, path: ConnectorPath, names: Iterable<string>): Owned {
  const served = snapshot.tenants.get(path.tenant)?.bundles;
  return ownedBundles(names, path.connector, (name) => served?.get(name)?.connector);
}
