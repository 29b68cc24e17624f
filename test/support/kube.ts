// Helpers for the end-to-end tests against a real API server (E2E_KUBECONFIG): CRDs from crds/,
// one namespace per test, objects applied from YAML, operators started in-process (namespaced to
// the test's namespace, with their Lease there too, so tests never see each other), and waiting for
// conditions by polling the API with a deadline.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  KubeConfig,
  KubernetesObjectApi,
  RbacAuthorizationV1Api,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { configFromFlags, type Config, type Tls } from '../../src/config.ts';
import { LOCAL_LISTENERS } from './service.ts';
import { clientsFor, PLURALS, statusOf, type CustomKind, type KubeClients } from '../../src/kube/index.ts';
import { createLogger } from '../../src/log.ts';
import { startOperator, type Operator, type OperatorOptions } from '../../src/modes/index.ts';

export const E2E_KUBECONFIG = process.env['E2E_KUBECONFIG'] || undefined;
export const ROOT = join(import.meta.dirname, '..', '..');
export const GROUP = 'acl.policyagent.dev';
export const VERSION = 'v1alpha1';

export function loadConfig(file = E2E_KUBECONFIG): KubeConfig {
  if (!file) throw new Error('E2E_KUBECONFIG is not set');
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

export function adminClients(): KubeClients {
  return clientsFor(loadConfig());
}

/** Polls `probe` every `everyMs` until it returns a value other than undefined/false; fails with `what` at the deadline. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function yamlObjects(text: string): KubernetesObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubernetesObject)
    .filter((o) => o !== null && o !== undefined);
}

/** Creates or replaces each object (the way `kubectl apply` ends up, without the merge). */
export async function apply(kc: KubeConfig, objects: readonly KubernetesObject[]): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const out: KubernetesObject[] = [];
  for (const o of objects) {
    // Test files run in parallel and may apply the same cluster-scoped object (CRDs, the ClusterRole):
    // a conflict means another one wrote it in between, so read it again.
    for (let attempt = 1; ; attempt++) {
      try {
        let current: KubernetesObject | undefined;
        try {
          current = await api.read({
            apiVersion: o.apiVersion,
            kind: o.kind,
            metadata: { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace },
          } as KubernetesObject & { metadata: { name: string } });
        } catch (err) {
          if (statusOf(err) !== 404) throw err;
        }
        out.push(
          current
            ? await api.replace({ ...o, metadata: { ...o.metadata, resourceVersion: current.metadata?.resourceVersion } })
            : await api.create(o),
        );
        break;
      } catch (err) {
        if (statusOf(err) !== 409 || attempt >= 10) throw err;
      }
    }
  }
  return out;
}

let crdsReady: Promise<void> | undefined;
/** Applies crds/*.yaml once per process and waits until the server serves them. */
export function ensureCrds(): Promise<void> {
  crdsReady ??= (async () => {
    const kc = loadConfig();
    const dir = join(ROOT, 'crds');
    const crds = readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => yamlObjects(readFileSync(join(dir, f), 'utf8')));
    await apply(kc, crds);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    for (const crd of crds) {
      await waitFor(`CRD ${crd.metadata?.name} Established`, async () => {
        const c = await ext.readCustomResourceDefinition({ name: crd.metadata?.name ?? '' });
        return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
      });
    }
  })();
  return crdsReady;
}

/** A fresh namespace `e2e-<prefix>-<random>`; `drop` deletes it (with everything in it). */
export async function createNamespace(prefix: string): Promise<{ name: string; drop(): Promise<void> }> {
  const clients = adminClients();
  const name = `e2e-${prefix}-${randomBytes(3).toString('hex')}`;
  await clients.core.createNamespace({ body: { metadata: { name, labels: { 'acl-operator-e2e': 'true' } } } });
  return {
    name,
    async drop() {
      try {
        await clients.core.deleteNamespace({ name });
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
      }
    },
  };
}

export interface E2EOperatorOptions extends OperatorOptions {
  readonly namespace: string;
  /** Where the Lease and the TLS Secret live (default: namespace). */
  readonly operatorNamespace?: string;
  readonly identity?: string;
  readonly kubeConfig?: KubeConfig;
  readonly tls?: Tls;
  readonly stateDir?: string;
  /** Settings a flag would give (--agent-expiry-seconds, ...), beyond the flags' own bounds. */
  readonly config?: Partial<Config>;
}

/** An operator watching one namespace, with its Lease in that namespace, fast Lease timings. */
export async function startE2EOperator(o: E2EOperatorOptions): Promise<Operator> {
  const base = operatorConfig(o.namespace, o.identity ?? 'e2e-operator', { tls: o.tls ?? { mode: 'insecure' } });
  const config: Config = {
    ...base,
    ...(o.stateDir ? { stateDir: o.stateDir } : {}),
    ...o.config,
    kube: { ...base.kube, operatorNamespace: o.operatorNamespace ?? o.namespace },
  };
  return startOperator(config, {
    log: o.log ?? createLogger((process.env['E2E_LOG_LEVEL'] as Config['logLevel'] | undefined) ?? 'silent'),
    clients: clientsFor(o.kubeConfig ?? loadConfig()),
    leaseSeconds: o.leaseSeconds ?? 3,
    renewMs: o.renewMs ?? 500,
    retryMs: o.retryMs ?? 200,
    watchRestartMs: o.watchRestartMs ?? 50,
    watchMaxRestartMs: o.watchMaxRestartMs ?? 500,
    ...(o.activityFlushMs !== undefined ? { activityFlushMs: o.activityFlushMs } : {}),
    ...(o.agentStatusIntervalMs !== undefined ? { agentStatusIntervalMs: o.agentStatusIntervalMs } : {}),
    ...(o.agentPublishIntervalMs !== undefined ? { agentPublishIntervalMs: o.agentPublishIntervalMs } : {}),
    ...(o.agentHeartbeatMs !== undefined ? { agentHeartbeatMs: o.agentHeartbeatMs } : {}),
    ...(o.signingRefreshMs !== undefined ? { signingRefreshMs: o.signingRefreshMs } : {}),
  });
}

/**
 * GET of a collection as the API server prints it for kubectl (a meta.k8s.io/v1 Table: the CRD's
 * additionalPrinterColumns), as `{column name: cell}` per row.
 */
export async function tableOf(path: string): Promise<Record<string, unknown>[]> {
  const kc = loadConfig();
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('E2E_KUBECONFIG has no current cluster');
  const options: import('node:https').RequestOptions = { headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } };
  await kc.applyToHTTPSOptions(options);
  const { request } = await import('node:https');
  const body = await new Promise<string>((resolve, reject) => {
    request(new URL(path, server), options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`GET ${path}: ${res.statusCode} ${text}`))));
    })
      .on('error', reject)
      .end();
  });
  const table = JSON.parse(body) as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
  return table.rows.map((r) => Object.fromEntries(table.columnDefinitions.map((c, i) => [c.name, r.cells[i]])));
}

/** Custom objects of a test namespace. */
export function customApi(namespace: string) {
  const { custom } = adminClients();
  const plural = (kind: CustomKind): string => PLURALS[kind];
  return {
    async get(
      kind: CustomKind,
      name: string,
    ): Promise<
      Record<string, unknown> & { metadata: { resourceVersion: string; generation: number; uid: string }; status?: Record<string, unknown> }
    > {
      return (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: plural(kind), name })) as never;
    },
    async status(kind: CustomKind, name: string): Promise<Record<string, unknown>> {
      try {
        return (await this.get(kind, name)).status ?? {};
      } catch (err) {
        if (statusOf(err) === 404) return {};
        throw err;
      }
    },
    /** Read-modify-replace, again on 409 (the operator writes status meanwhile), like kubectl edit. */
    async update(
      kind: CustomKind,
      name: string,
      change: (o: Record<string, unknown> & { metadata: Record<string, unknown> }) => Record<string, unknown>,
    ): Promise<void> {
      for (let attempt = 1; ; attempt++) {
        const current = await this.get(kind, name);
        try {
          await custom.replaceNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace,
            plural: plural(kind),
            name,
            body: change(current),
          });
          return;
        } catch (err) {
          if (statusOf(err) !== 409 || attempt >= 10) throw err;
        }
      }
    },
    async patchSpec(kind: 'Rule' | 'Connector' | 'Bundle', name: string, spec: Record<string, unknown>): Promise<void> {
      await this.update(kind, name, (o) => ({ ...o, spec: { ...(o['spec'] as Record<string, unknown>), ...spec } }));
    },
    async annotate(kind: 'Rule' | 'Connector' | 'Bundle', name: string, annotations: Record<string, string>): Promise<void> {
      await this.update(kind, name, (o) => ({
        ...o,
        metadata: {
          ...o.metadata,
          annotations: { ...((o.metadata['annotations'] as Record<string, string> | undefined) ?? {}), ...annotations },
        },
      }));
    },
    async remove(kind: 'Rule' | 'Connector' | 'Bundle', name: string): Promise<void> {
      await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: plural(kind), name });
    },
  };
}

/** A connector's token as its Secret holds it (undefined while there is none). */
export async function readToken(namespace: string, connector: string): Promise<string | undefined> {
  try {
    const s = await adminClients().core.readNamespacedSecret({ name: `${connector}-token`, namespace });
    const b64 = s.data?.['token'];
    return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw err;
  }
}

/** YAML of a Rule, a Connector, a Bundle and a Directory for tenant `ns`. */
export function ruleYaml(ns: string, name: string, spec: Record<string, unknown>): KubernetesObject {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'Rule', metadata: { name, namespace: ns }, spec } as KubernetesObject;
}
export function connectorYaml(ns: string, name: string, spec: Record<string, unknown> = {}): KubernetesObject {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'Connector', metadata: { name, namespace: ns }, spec } as KubernetesObject;
}
export function bundleYaml(ns: string, name: string, spec: Record<string, unknown>): KubernetesObject {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'Bundle', metadata: { name, namespace: ns }, spec } as KubernetesObject;
}
export function directoryYaml(ns: string, name: string, spec: Record<string, unknown>): KubernetesObject {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'Directory', metadata: { name, namespace: ns }, spec } as KubernetesObject;
}
/** A Secret `name` holding `token`, labelled `label: "true"` (how the operator finds API keys and admin keys). */
export function labelledSecret(ns: string, name: string, label: string, token: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns, labels: { [label]: 'true' } },
    data: { token: Buffer.from(token).toString('base64') },
  } as KubernetesObject;
}
export function apiKeySecret(ns: string, key: string): KubernetesObject {
  return labelledSecret(ns, 'api-key', 'acl.policyagent.dev/api-key', key);
}

/** A rule that allows users to read documents of their team. */
export const TEAM_RULE = {
  state: 'Enforced',
  subjectType: 'user',
  actions: ['read'],
  resourceType: 'document',
  condition: 'principal.team == resource.team',
};

/** GET of a bundle with a connector token. */
export async function fetchBundle(
  op: Operator,
  ns: string,
  connector: string,
  bundle: string,
  token: string | undefined,
  etag?: string,
): Promise<{ status: number; etag: string | null; bytes: Buffer }> {
  const res = await fetch(`${op.apiUrl}/${ns}/connectors/policyagent/${connector}/bundles/${bundle}`, {
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(etag ? { 'if-none-match': etag } : {}) },
  });
  return { status: res.status, etag: res.headers.get('etag'), bytes: Buffer.from(await res.arrayBuffer()) };
}

/**
 * A TCP relay in front of the API server that a test can cut (every connection dropped and refused)
 * or freeze (connections stay open and are accepted, but no byte moves: a black-holed network path).
 */
export interface ApiProxy {
  readonly kubeConfig: KubeConfig;
  cut(): void;
  freeze(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startApiProxy(): Promise<ApiProxy> {
  const kc = loadConfig();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('E2E_KUBECONFIG has no current cluster');
  const target = new URL(cluster.server);
  const sockets = new Set<Socket>();
  let state: 'open' | 'cut' | 'frozen' = 'open';
  const server: Server = createServer((client) => {
    client.on('error', () => undefined);
    if (state === 'cut') {
      client.destroy();
      return;
    }
    sockets.add(client);
    if (state === 'frozen') return;
    const upstream = connect(Number(target.port || 443), target.hostname);
    sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    client.on('data', (d: Buffer) => {
      if (state === 'open') upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (state === 'open') client.write(d);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const proxied = new KubeConfig();
  proxied.loadFromOptions({
    clusters: kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `${target.protocol}//127.0.0.1:${port}` } : c)),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return {
    kubeConfig: proxied,
    cut() {
      state = 'cut';
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    freeze() {
      state = 'frozen';
    },
    restore() {
      state = 'open';
    },
    close: () =>
      new Promise<void>((r) => {
        state = 'cut';
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** The Config of an operator watching one namespace (its Lease there too), for tests that call startOperator. */
export function operatorConfig(namespace: string, identity: string, extra: Partial<Config> = {}): Config {
  const base = configFromFlags([
    '--state-dir',
    join(tmpdir(), 'acl-operator-e2e', namespace, identity),
    ...LOCAL_LISTENERS,
    '--log-level',
    'silent',
  ]);
  return { ...base, kube: { ...base.kube, namespaces: [namespace], operatorNamespace: namespace, identity }, ...extra };
}

/** A counter's value in an operator's registry (summed over labels matching `labels`). */
export async function metricValue(op: Operator, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await op.metrics.registry.getSingleMetric(name)?.get();
  return (metric?.values ?? []).filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

/** Admin RBAC objects of deploy/20-rbac.yaml. */
export function deployRbac(): KubernetesObject[] {
  return yamlObjects(readFileSync(join(ROOT, 'deploy', '20-rbac.yaml'), 'utf8'));
}

export function rbacApi(): RbacAuthorizationV1Api {
  return loadConfig().makeApiClient(RbacAuthorizationV1Api);
}
