// The one place that builds @kubernetes/client-node clients, and the few helpers every kube module
// needs: which resource a kind is, what an API error was, and the label on what the operator writes.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { GROUP, VERSION } from '../api/index.ts';
import type { Kind } from '../controller/index.ts';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface KubeClients {
  readonly config: KubeConfig;
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
}

/** From a kubeconfig file when given, else KUBECONFIG, ~/.kube/config or the in-cluster service account. */
export function createClients(kubeconfig: string | undefined, kubeconfigVariable: string | undefined): KubeClients {
  const config = new KubeConfig();
  if (kubeconfig !== undefined) {
    try {
      config.loadFromFile(kubeconfig);
    } catch (err) {
      throw new Error(`--kubeconfig ${kubeconfig} cannot be read: ${err instanceof Error ? err.message : String(err)}`);
    }
  } else {
    // loadFromDefault ends with http://localhost:8080 when it finds nothing: say so instead.
    const homeConfig = join(homedir(), '.kube', 'config');
    if (!kubeconfigVariable && !existsSync(homeConfig) && !existsSync(SERVICE_ACCOUNT_TOKEN)) {
      throw new Error(
        `No Kubernetes cluster configured: not in a cluster (no ${SERVICE_ACCOUNT_TOKEN}), KUBECONFIG is not set and there is no ${homeConfig}. Pass --kubeconfig <file>, or --manifests <dir> to run standalone on a folder of manifests.`,
      );
    }
    config.loadFromDefault();
  }
  return clientsFor(config);
}

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/**
 * client-node 2.0 builds a new undici Agent, hence a new TLS connection, for every API call and
 * every watch (measured: 4.4 ms and 2.7 ms of CPU per call, 41 % of a first start's CPU in TLS, and
 * about 180 MB of RSS per 1,000 calls). One Agent per set of TLS settings is shared instead; auth
 * headers (tokens, which may be refreshed) are still applied per request by client-node.
 */
function shareConnections(config: KubeConfig): void {
  const original = config.applySecurityAuthentication.bind(config);
  const pool = new Map<string, Dispatcher>();
  config.applySecurityAuthentication = async (context: RequestContext): Promise<void> => {
    await original(context);
    const created = context.getDispatcher();
    if (!created) return;
    const tls: RequestOptions = {};
    await config.applyToHTTPSOptions(tls);
    const text = (v: unknown): unknown => (Buffer.isBuffer(v) ? v.toString('base64') : (v ?? null));
    const key = createHash('sha256')
      .update(
        JSON.stringify(
          [config.getCurrentCluster()?.server, tls.ca, tls.cert, tls.key, tls.pfx, tls.servername, tls.rejectUnauthorized].map(text),
        ),
      )
      .digest('hex');
    const shared = pool.get(key);
    if (shared) {
      context.setDispatcher(shared);
      void created.close().catch(() => undefined);
      return;
    }
    // New TLS settings (a rotated client certificate): the oldest Agent goes once a few are kept.
    if (pool.size >= 4) {
      const [oldKey, old] = pool.entries().next().value as [string, Dispatcher];
      pool.delete(oldKey);
      void old.close().catch(() => undefined);
    }
    pool.set(key, created);
  };
}

/** Clients for a loaded KubeConfig (its connections are shared from here on). */
export function clientsFor(config: KubeConfig): KubeClients {
  if (!config.getCurrentCluster())
    throw new Error('The kubeconfig has no current cluster: pick a context (kubectl config use-context) or pass --kubeconfig');
  shareConnections(config);
  return {
    config,
    custom: config.makeApiClient(CustomObjectsApi),
    core: config.makeApiClient(CoreV1Api),
    coordination: config.makeApiClient(CoordinationV1Api),
  };
}

/** The label every Secret the operator writes carries, next to the connector label. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'acl-operator';

export type CustomKind = Exclude<Kind, 'Secret'>;

export const PLURALS: Readonly<Record<CustomKind, string>> = {
  Rule: 'rules',
  Connector: 'connectors',
  Bundle: 'bundles',
  Directory: 'directories',
};

/** The REST path of a collection, in one namespace or across all of them. */
export function collectionPath(kind: Kind, namespace: string | undefined): string {
  const ns = namespace === undefined ? '' : `/namespaces/${namespace}`;
  return kind === 'Secret' ? `/api/v1${ns}/secrets` : `/apis/${GROUP}/${VERSION}${ns}/${PLURALS[kind]}`;
}

/** The HTTP status of a failed API call, when it was one. */
export function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** A short description of a failed API call for logs and errors (never the request body). */
export function describeError(err: unknown): string {
  const status = statusOf(err);
  const body = (err as { body?: unknown } | null)?.body;
  let message: string | undefined;
  if (typeof body === 'string') {
    try {
      message = (JSON.parse(body) as { message?: string }).message;
    } catch {
      message = body.slice(0, 300);
    }
  } else if (typeof body === 'object' && body !== null) {
    message = (body as { message?: string }).message;
  }
  const text = message ?? (err instanceof Error ? err.message : String(err));
  return status === undefined ? text : `HTTP ${status}: ${text}`;
}

/**
 * Whether resourceVersion a is newer than b. Kubernetes calls them opaque, but every API server
 * backed by etcd uses its revision; anything else compares only for equality.
 */
export function newerVersion(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined) return false;
  if (b === undefined) return true;
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) > BigInt(b);
  return a !== b;
}
