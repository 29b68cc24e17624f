// OPA's own reports (docs/opa.md): status reports (status.ts) and decision logs (logs.ts), posted
// with the connector token; and what they told us, per bundle, for the tenant's API key:
// GET .../bundles/{bundle}/agents and .../decisions.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { agentsReport } from '../fleet/index.ts';
import { bundleKey } from '../store/index.ts';
import type { ConnectorPath } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { createLogsHandler } from './logs.ts';
import { createBundleReadHandler } from './reads.ts';
import { createStatusHandler } from './status.ts';

export interface FleetHandlers {
  status(req: IncomingMessage, res: ServerResponse, path: ConnectorPath): void;
  logs(req: IncomingMessage, res: ServerResponse, path: ConnectorPath): void;
  agents(req: Request, res: Response): void;
  decisions(req: Request, res: Response): void;
}

/** The four fleet handlers, logging under one child logger (module: fleet). */
export function createFleetHandlers(deps: ApiDeps): FleetHandlers {
  const { fleet } = deps;
  const log = deps.log.child({ module: 'fleet' });
  return {
    status: createStatusHandler(deps, log),
    logs: createLogsHandler(deps, log),
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
