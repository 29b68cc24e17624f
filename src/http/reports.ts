// OPA's own reports (docs/opa.md): status reports (status.ts) and decision logs (logs.ts), posted
// with the connector token; and what they told us, per bundle, for the tenant's API key:
// GET .../bundles/{bundle}/agents and .../decisions.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { agentsReport } from '../fleet/index.ts';
import { bundleKey } from '../store/index.ts';
import type { ConnectorPath } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { createUploadGate, MAX_BYTES_HELD, MAX_UPLOADS_HELD } from './gate.ts';
import { createLogsHandler } from './logs.ts';
import { createBundleReadHandler } from './reads.ts';
import { createStatusHandler } from './status.ts';
import { createUnrecorded } from './unrecorded.ts';
import type { UploadRoute } from './upload-route.ts';

export interface FleetHandlers {
  status(req: IncomingMessage, res: ServerResponse, path: ConnectorPath): void;
  logs(req: IncomingMessage, res: ServerResponse, path: ConnectorPath): void;
  agents(req: Request, res: Response): void;
  decisions(req: Request, res: Response): void;
}

/** Uploads refused at the connector token: counted by endpoint and status, described now and then at debug level. */
function unrecordedUploads(deps: ApiDeps, log: Logger, endpoint: 'status' | 'logs'): UploadRoute['unrecorded'] {
  const note = createUnrecorded(
    { log, now: deps.now },
    (status) => deps.metrics.agentUploadsUnrecorded.labels(endpoint, String(status)).inc(),
    'Refused OPA uploads at the connector token (not recorded)',
  );
  return (status, path, req) => note(status, { endpoint, tenant: path.tenant, connector: path.connector }, req);
}

/** The four fleet handlers, logging under one child logger (module: fleet); the two upload routes share one gate. */
export function createFleetHandlers(deps: ApiDeps): FleetHandlers {
  const { fleet } = deps;
  const log = deps.log.child({ module: 'fleet' });
  const gate = createUploadGate(MAX_UPLOADS_HELD, Math.max(MAX_BYTES_HELD, fleet.maxUploadBytes));
  return {
    status: createStatusHandler(deps, log, gate, unrecordedUploads(deps, log, 'status')),
    logs: createLogsHandler(deps, log, gate, unrecordedUploads(deps, log, 'logs')),
    agents: createBundleReadHandler(deps, (path, bundle) => {
      const {
        tenant,
        connector,
        bundle: name,
        revision,
        ...rest
      } = agentsReport(fleet.agents, { ...path, bundle: bundle.name, revision: bundle.built.revision }, deps.now());
      return rest;
    }),
    decisions: createBundleReadHandler(deps, (path, bundle) => ({ decisions: fleet.recent.list(bundleKey(path.tenant, bundle.name)) })),
  };
}
