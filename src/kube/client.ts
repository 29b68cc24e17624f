// The one place that builds @kubernetes/client-node clients, and the few helpers every kube module
// needs: which resource a kind is, and what an API error was.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { GROUP, VERSION } from '../api/meta.ts';
import type { Kind } from '../controller/index.ts';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface KubeClients {
  readonly config: KubeConfig;
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
}

/** From a kubeconfig file when given, else KUBECONFIG, ~/.kube/config or the in-cluster service account. */
export function createClients(kubeconfig: string | undefined): KubeClients {
  const config = new KubeConfig();
  if (kubeconfig !== undefined) {
    config.loadFromFile(kubeconfig);
  } else {
    // loadFromDefault ends with http://localhost:8080 when it finds nothing: say so instead.
    const homeConfig = join(homedir(), '.kube', 'config');
    if (!process.env['KUBECONFIG'] && !existsSync(homeConfig) && !existsSync(SERVICE_ACCOUNT_TOKEN)) {
      throw new Error(`No Kubernetes cluster configured: not in a cluster (no ${SERVICE_ACCOUNT_TOKEN}), KUBECONFIG is not set and there is no ${homeConfig}. Pass --kubeconfig <file>, or --manifests <dir> to run standalone on a folder of manifests.`);
    }
    config.loadFromDefault();
  }
  return clientsFor(config);
}

/** Clients for a loaded KubeConfig. */
export function clientsFor(config: KubeConfig): KubeClients {
  if (!config.getCurrentCluster()) throw new Error('The kubeconfig has no current cluster: pick a context (kubectl config use-context) or pass --kubeconfig');
  return {
    config,
    custom: config.makeApiClient(CustomObjectsApi),
    core: config.makeApiClient(CoreV1Api),
    coordination: config.makeApiClient(CoordinationV1Api),
  };
}

export type CustomKind = Exclude<Kind, 'Secret'>;

export const PLURALS: Readonly<Record<CustomKind, string>> = { Rule: 'rules', Connector: 'connectors', Bundle: 'bundles' };

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
    try { message = (JSON.parse(body) as { message?: string }).message; } catch { message = body.slice(0, 300); }
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
