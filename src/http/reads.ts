// GET .../bundles/{bundle}/activity, /agents and /decisions: what the service knows of a bundle,
// read with the tenant's API key (not the connector token, which every OPA of the connector holds).
import type { Request, Response } from 'express';
import type { BundleEntry } from '../store/index.ts';
import type { ConnectorPath } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { sendError, WWW_AUTHENTICATE } from './errors.ts';
import { sendUncachedJson } from './reply.ts';
import { tenantOf } from './tenant.ts';

/**
 * A read of one bundle: 401 without the tenant's API key, 404 for another tenant's bundle or one of
 * another connector; otherwise `{tenant, connector, bundle, revision, ...body}`.
 */
export function createBundleReadHandler(
  deps: ApiDeps,
  body: (path: ConnectorPath, bundle: BundleEntry) => Record<string, unknown>,
): (req: Request, res: Response) => void {
  return function readBundle(req, res) {
    const tenant = String(req.params['tenant']);
    const connector = String(req.params['connector']);
    const name = String(req.params['bundle']);
    const snapshot = deps.store.snapshot();
    const keyTenant = tenantOf(snapshot, req.headers.authorization);
    if (keyTenant === undefined) {
      sendError(res, 'unauthenticated', 'an API key of the tenant is required: Authorization: Bearer <key>', {
        'WWW-Authenticate': WWW_AUTHENTICATE,
      });
      return;
    }
    const bundle = snapshot.tenants.get(tenant)?.bundles.get(name);
    if (keyTenant !== tenant || !bundle || bundle.connector !== connector) {
      sendError(res, 'not_found', `connector ${connector} of tenant ${tenant} has no bundle ${name}`);
      return;
    }
    sendUncachedJson(res, { tenant, connector, bundle: name, revision: bundle.built.revision, ...body({ tenant, connector }, bundle) });
  };
}
