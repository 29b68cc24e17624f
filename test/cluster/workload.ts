// The tenant's application (test/cluster/client/load.ts) as a Pod, and reading what it counted; the
// sizing tenants' objects and a pod's memory: shared by the cluster tier and bench/cluster.ts.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { exec, IMAGE, kubectl, OPERATOR_NS, OPERATOR_SELECTOR, pods, ROOT, waitFor } from './support.ts';

export const TENANT = 'shop';
const LOAD = 'acl-load';

/** The load client's running totals (test/cluster/client/load.ts). */
export interface LoadCounts {
  decisions: { ok: number; failed: number; failures: Record<string, number>; lastFailure?: string };
  polls: { ok: number; failed: number; failures: Record<string, number>; lastFailure?: string };
  allows: number;
  notModified: number;
  etags: string[];
}

/** The last line the load client printed. */
export async function loadCounts(): Promise<LoadCounts> {
  const out = await kubectl(['-n', TENANT, 'logs', LOAD, '--tail=1']);
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as LoadCounts;
}

/** Waits until the client has counted `n` more decisions and polls answered than in `since`. */
export async function loadProgress(since: LoadCounts, n: number, timeoutMs = 60_000): Promise<LoadCounts> {
  return waitFor(
    `${n} more decisions and polls answered`,
    async () => {
      const c = await loadCounts();
      return c.decisions.ok >= since.decisions.ok + n && c.polls.ok >= since.polls.ok + Math.ceil(n / 10) && c;
    },
    timeoutMs,
  );
}

/** Errors the storefront's OPA logged since `sinceTime` (a failed bundle download, status or log upload). */
export async function opaErrors(sinceTime: string): Promise<string[]> {
  const out = await kubectl(['-n', TENANT, 'logs', 'deploy/storefront', '-c', 'opa', `--since-time=${sinceTime}`]);
  return out.split('\n').filter((l) => /"level":"error"/.test(l));
}

/** Where the example tenant's connector token Secret (token and ca.crt) is mounted in a scriptPod. */
export const TOKEN_DIR = '/var/run/acl-operator';

/**
 * A pod of the example tenant that runs a script of ours (from ConfigMap `configMap`, default `name`, at /script)
 * with our image's Node, trusting the operator's CA, as restricted as everything in `shop`.
 */
export function scriptPod(o: {
  name: string;
  script: string;
  configMap?: string;
  env: readonly { name: string; value?: string; valueFrom?: unknown }[];
  once?: boolean;
  labels?: Record<string, string>;
  resources?: unknown;
}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: o.name, namespace: TENANT, ...(o.labels ? { labels: o.labels } : {}) },
    spec: {
      ...(o.once ? { restartPolicy: 'Never' } : {}),
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: o.name,
          image: IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['node', `/script/${o.script}`],
          env: [...o.env, { name: 'NODE_EXTRA_CA_CERTS', value: `${TOKEN_DIR}/ca.crt` }],
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          ...(o.resources ? { resources: o.resources } : {}),
          volumeMounts: [
            { name: 'script', mountPath: '/script', readOnly: true },
            { name: 'token', mountPath: TOKEN_DIR, readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'script', configMap: { name: o.configMap ?? o.name } },
        { name: 'token', secret: { secretName: 'storefront-token' } },
      ],
    },
  };
}

/** The load client's Pod, API key Secret and ConfigMap (restricted, like everything in shop). */
export function loadManifest(): string {
  const source = readFileSync(join(ROOT, 'test', 'cluster', 'client', 'load.ts'), 'utf8');
  const key = randomBytes(32).toString('base64url');
  const objects = [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: LOAD, namespace: TENANT }, data: { 'load.ts': source } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: LOAD, namespace: TENANT, labels: { 'acl.policyagent.dev/api-key': 'true' } },
      stringData: { token: key },
    },
    scriptPod({
      name: LOAD,
      script: 'load.ts',
      labels: { 'app.kubernetes.io/name': LOAD },
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
      env: [
        { name: 'ACL_URL', value: 'https://acl-operator.acl-system.svc:8443' },
        { name: 'ACL_TENANT', value: TENANT },
        { name: 'ACL_CONNECTOR', value: 'storefront' },
        { name: 'ACL_BUNDLE', value: 'storefront-policies' },
        { name: 'API_KEY', valueFrom: { secretKeyRef: { name: LOAD, key: 'token' } } },
        { name: 'CONNECTOR_TOKEN_FILE', value: `${TOKEN_DIR}/token` },
        { name: 'DECISIONS_PER_SECOND', value: '50' },
        { name: 'POLLS_PER_SECOND', value: '5' },
      ],
    }),
  ];
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects });
}

export const SIZING_NAMESPACES = 100;
export const RULES_PER_NAMESPACE = 100;
export const CONCURRENCY = 16;
export const LIMIT_BYTES = 512 * 1024 * 1024;

export const ns = (i: number) => `acl-size-${String(i).padStart(3, '0')}`;

export function objectsOf(i: number): KubernetesObject[] {
  const namespace = ns(i);
  const meta = (name: string) => ({ name, namespace });
  const out: KubernetesObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { 'acl-cluster-tier': 'true' } } },
  ];
  for (let r = 0; r < RULES_PER_NAMESPACE; r++) {
    out.push({
      apiVersion: 'acl.policyagent.dev/v1alpha1',
      kind: 'Rule',
      metadata: meta(`rule-${r}`),
      spec: {
        state: 'Enforced',
        subjectType: 'user',
        actions: ['read', `act${r % 7}`],
        resourceType: `type${r % 10}`,
        condition: `principal.level >= ${r} && resource.team == principal.team`,
      },
    } as KubernetesObject);
  }
  out.push({ apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Connector', metadata: meta('sidecars'), spec: {} } as KubernetesObject);
  out.push({
    apiVersion: 'acl.policyagent.dev/v1alpha1',
    kind: 'Bundle',
    metadata: meta('all'),
    spec: { connector: 'sidecars' },
  } as KubernetesObject);
  return out;
}

/** Memory of a pod's container as the kernel counts it against the limit, and its process's RSS. */
export async function podMemory(pod: string): Promise<{ cgroupBytes: number; rssBytes: number }> {
  const script =
    'cat /sys/fs/cgroup/memory/memory.usage_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.current; grep VmRSS /proc/1/status';
  const out = await exec(OPERATOR_NS, pod, 'operator', ['sh', '-c', script]);
  const [cgroup, rss] = out.trim().split('\n');
  return { cgroupBytes: Number(cgroup), rssBytes: Number(/(\d+)\s*kB/.exec(rss ?? '')?.[1] ?? Number.NaN) * 1024 };
}

export const mb = (b: number) => `${Math.round(b / 1024 / 1024)} MiB`;

export async function restartsAndKills(): Promise<{ restarts: number; oomKilled: number }> {
  const all = await pods(OPERATOR_NS, OPERATOR_SELECTOR);
  const statuses = all.flatMap((p) => p.status.containerStatuses ?? []);
  return {
    restarts: statuses.reduce((n, s) => n + s.restartCount, 0),
    oomKilled: statuses.filter((s) => s.lastState?.terminated?.reason === 'OOMKilled').length,
  };
}
