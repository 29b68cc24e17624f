// createApiApp and createOpsApp build Express apps from their dependencies; main listens.
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';
import { ADMISSION_PATH, createAdmissionHandler } from './admission.ts';
import { createAuthorizationHandler } from './authorization.ts';
import { createActivityHandler, createBundleHandler, queryKey } from './bundles.ts';
import type { ApiDeps } from './deps.ts';
import { createAuthzenHandlers, createMetadataHandler } from './endpoints.ts';
import { createFleetHandlers } from './reports.ts';
import { sendError } from './errors.ts';
import { answerThrow, errorMiddleware, type ThrowSite } from './guard.ts';
import { AUTHZEN_ENDPOINT_NAMES, AUTHZEN_ENDPOINTS, AUTHZEN_METADATA_PATH } from '../authzen/index.ts';
import { setRequestIdEcho } from './reply.ts';

const CONNECTOR_PATH = '/:tenant/connectors/policyagent/:connector';
const BUNDLE_PATH = `${CONNECTOR_PATH}/bundles/:bundle`;
/** A tenant in a path: a namespace name (DNS-1123 label). */
const TENANT = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function methodNotAllowed(allow: string) {
  return function notAllowed(_req: Request, res: Response): void {
    sendError(res, 'method_not_allowed', `use ${allow}`, { Allow: allow });
  };
}

function notFound(req: Request, res: Response): void {
  sendError(res, 'not_found', `no route for ${req.method} ${req.path.slice(0, 200)}`);
}

function common(app: express.Express): void {
  app.disable('x-powered-by');
  app.set('etag', false); // the bundle route is the only owner of caching
  app.set('query parser', false);
}

/** The handlers both the Express app and the hot-path dispatch call: one instance, one set of caches. */
interface ApiHandlers {
  readonly authorize: ReturnType<typeof createAuthorizationHandler>;
  readonly serveBundle: ReturnType<typeof createBundleHandler>;
  readonly authzen: ReturnType<typeof createAuthzenHandlers>;
  readonly fleet: ReturnType<typeof createFleetHandlers>;
}

function apiHandlers(deps: ApiDeps): ApiHandlers {
  return {
    authorize: createAuthorizationHandler(deps),
    serveBundle: createBundleHandler(deps),
    authzen: createAuthzenHandlers(deps),
    fleet: createFleetHandlers(deps),
  };
}

/** The tenant and connector of a route under CONNECTOR_PATH. */
function connectorOf(req: Request): { tenant: string; connector: string } {
  return { tenant: String(req.params['tenant']), connector: String(req.params['connector']) };
}

/** A segment that is not a namespace name is no tenant: 404 whatever the method. */
function tenantSegment(req: Request, res: Response, next: NextFunction): void {
  if (TENANT.test(String(req.params['tenant']))) next();
  else notFound(req, res);
}

/** The AuthZEN endpoints, plain and per tenant, and the metadata document, as AUTHZEN_ENDPOINTS lists them. */
function routeAuthzen(app: express.Express, deps: ApiDeps, authzen: ApiHandlers['authzen']): void {
  for (const endpoint of AUTHZEN_ENDPOINT_NAMES) {
    const { path } = AUTHZEN_ENDPOINTS[endpoint];
    const handle = authzen[endpoint];
    app.post(path, (req, res) => {
      handle(req, res);
    });
    app.all(path, methodNotAllowed('POST'));
    // The per-tenant form that /.well-known/authzen-configuration/<tenant> names.
    app.all(`/:tenant${path}`, tenantSegment);
    app.post(`/:tenant${path}`, (req, res) => {
      handle(req, res, String(req.params['tenant']));
    });
    app.all(`/:tenant${path}`, methodNotAllowed('POST'));
  }
  const discovery = createMetadataHandler(deps);
  app.get(AUTHZEN_METADATA_PATH, (req, res) => {
    discovery(req, res);
  });
  app.all(`${AUTHZEN_METADATA_PATH}/:tenant`, tenantSegment);
  app.get(`${AUTHZEN_METADATA_PATH}/:tenant`, (req, res) => {
    discovery(req, res, String(req.params['tenant']));
  });
  app.all([AUTHZEN_METADATA_PATH, `${AUTHZEN_METADATA_PATH}/:tenant`], methodNotAllowed('GET, HEAD'));
}

/** What OPA and the tenant reach under a connector: the bundle, its reads, and OPA's uploads. */
function routeConnectors(app: express.Express, deps: ApiDeps, handlers: ApiHandlers): void {
  const { serveBundle, fleet } = handlers;
  app.get(BUNDLE_PATH, (req, res) => {
    serveBundle(req, res, {
      tenant: String(req.params['tenant']),
      connector: String(req.params['connector']),
      bundle: String(req.params['bundle']),
      key: queryKey(req.originalUrl),
    });
  });
  app.all(BUNDLE_PATH, methodNotAllowed('GET, HEAD'));
  app.get(`${BUNDLE_PATH}/activity`, createActivityHandler(deps));
  app.get(`${BUNDLE_PATH}/agents`, fleet.agents);
  app.get(`${BUNDLE_PATH}/decisions`, fleet.decisions);
  // OPA's status plugin posts to <service url>/status, or /status/<partition_name> (accepted, not used).
  const statusPaths = [`${CONNECTOR_PATH}/status`, `${CONNECTOR_PATH}/status/:partition`];
  app.post(statusPaths, (req, res) => {
    fleet.status(req, res, connectorOf(req));
  });
  app.all(statusPaths, methodNotAllowed('POST'));
  app.post(`${CONNECTOR_PATH}/logs`, (req, res) => {
    fleet.logs(req, res, connectorOf(req));
  });
  app.all(`${CONNECTOR_PATH}/logs`, methodNotAllowed('POST'));
}

/** The API: POST /authorization, the AuthZEN 1.0 endpoints and metadata, the bundle endpoint, and the admission webhook. */
export function createApiApp(deps: ApiDeps, handlers: ApiHandlers = apiHandlers(deps)): express.Express {
  const app = express();
  common(app);
  app.post('/authorization', (req, res) => {
    handlers.authorize(req, res);
  });
  app.all('/authorization', methodNotAllowed('POST'));
  routeAuthzen(app, deps, handlers.authzen);
  routeConnectors(app, deps, handlers);
  if (deps.admission) {
    const admit = createAdmissionHandler(deps.admission, deps.log, deps.metrics);
    app.post(ADMISSION_PATH, (req, res) => {
      admit(req, res);
    });
    app.all(ADMISSION_PATH, methodNotAllowed('POST'));
  }
  app.use(notFound);
  app.use(errorMiddleware(deps.log));
  return app;
}

/**
 * The hot paths in their exact, plain form: no percent-escapes, no trailing slash, and no query but
 * the `?key=<kid>` every signed OPA configuration adds to its bundle resource.
 */
const PLAIN_BUNDLE_PATH =
  /^\/([A-Za-z0-9._~-]+)\/connectors\/policyagent\/([A-Za-z0-9._~-]+)\/bundles\/([A-Za-z0-9._~-]+)(?:\?key=([A-Za-z0-9._~-]+))?$/;
/** OPA's uploads, after every poll: status reports and decision logs. */
const PLAIN_UPLOAD_PATH = /^\/([A-Za-z0-9._~-]+)\/connectors\/policyagent\/([A-Za-z0-9._~-]+)\/(status|logs)$/;

/**
 * Answers a decision, bundle poll or upload whose path is in its plain form, straight from its
 * handler; false for anything else (the Express app's to answer). Every answer echoes X-Request-ID:
 * the decision handlers put it in their one writeHead (a header set beforehand moves Node's
 * writeHead off its fast path, about 0.5 µs a decision); for everything else it is set here, once.
 */
function dispatchPlain(handlers: ApiHandlers, req: IncomingMessage, res: ServerResponse): boolean {
  const url = req.url ?? '';
  if (req.method === 'POST' && url === '/authorization') {
    handlers.authorize(req, res);
    return true;
  }
  if (req.method === 'POST' && url === AUTHZEN_ENDPOINTS.evaluation.path) {
    handlers.authzen.evaluation(req, res);
    return true;
  }
  setRequestIdEcho(req, res);
  if (req.method === 'GET' || req.method === 'HEAD') {
    const m = PLAIN_BUNDLE_PATH.exec(url);
    if (m) {
      handlers.serveBundle(req, res, { tenant: m[1] as string, connector: m[2] as string, bundle: m[3] as string, key: m[4] });
      return true;
    }
  }
  if (req.method === 'POST') {
    const m = PLAIN_UPLOAD_PATH.exec(url);
    if (m) {
      const upload = m[3] === 'status' ? handlers.fleet.status : handlers.fleet.logs;
      upload(req, res, { tenant: m[1] as string, connector: m[2] as string });
      return true;
    }
  }
  return false;
}

/**
 * The API listener's request handler. Decisions and bundle polls in their plain form go straight to
 * their handlers: Express's per-request setup costs about 12 µs, a third of a decision's budget
 * (docs/benchmarks.md). Everything else, including every odd spelling of those paths, goes through
 * the Express app, which reaches the same handlers.
 */
export function createApiHandler(deps: ApiDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const handlers = apiHandlers(deps);
  const app = createApiApp(deps, handlers);
  const site: ThrowSite = { log: deps.log, fields: (req) => ({ method: req.method, path: (req.url ?? '').slice(0, 200) }) };
  return function api(req, res) {
    let answered: boolean;
    try {
      answered = dispatchPlain(handlers, req, res);
    } catch (err) {
      answerThrow(site, req, res, err);
      return;
    }
    if (!answered) app(req, res);
  };
}

export interface OpsDeps {
  readonly metrics: Metrics;
  readonly log: Logger;
  /** undefined when ready; otherwise why not. */
  readonly notReady: () => string | undefined;
}

/** Operations: /metrics (Prometheus text), /healthz (liveness), /readyz (store synced). */
export function createOpsApp(deps: OpsDeps): express.Express {
  const app = express();
  common(app);
  app.use(function echoRequestId(req, res, next) {
    setRequestIdEcho(req, res);
    next();
  });
  app.get('/metrics', (_req, res, next) => {
    deps.metrics.registry.metrics().then((text) => {
      res.writeHead(200, { 'Content-Type': deps.metrics.registry.contentType });
      res.end(text);
    }, next);
  });
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });
  app.get('/readyz', (_req, res) => {
    const why = deps.notReady();
    if (why === undefined) res.type('text/plain').send('ready\n');
    else res.status(503).type('text/plain').send(`not ready: ${why}\n`);
  });
  app.use(notFound);
  app.use(errorMiddleware(deps.log));
  return app;
}
