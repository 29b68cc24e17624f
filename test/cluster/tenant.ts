// The first tenant, as docs/kubernetes.md creates it (deploy/examples/opa-sidecar.yaml: a Rule, a
// Connector, a Bundle and an application with an OPA sidecar), the webhook as the API server calls it
// through the Service, and the application that the failover and upgrade tests keep busy.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { IMAGE, kubectl, kubectlJson, pods, ROOT, run, runDocsBlock, waitFor } from './support.ts';

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
  return waitFor(`${n} more decisions and polls answered`, async () => {
    const c = await loadCounts();
    return c.decisions.ok >= since.decisions.ok + n && c.polls.ok >= since.polls.ok + Math.ceil(n / 10) && c;
  }, timeoutMs);
}

/** Errors the storefront's OPA logged since `sinceTime` (a failed bundle download, status or log upload). */
export async function opaErrors(sinceTime: string): Promise<string[]> {
  const out = await kubectl(['-n', TENANT, 'logs', 'deploy/storefront', '-c', 'opa', `--since-time=${sinceTime}`]);
  return out.split('\n').filter((l) => /"level":"error"/.test(l));
}

/** Asks the storefront's OPA sidecar (its REST API is on the pod's loopback: a port-forward). */
async function askSidecar(input: unknown): Promise<unknown> {
  const pod = (await pods(TENANT, 'app.kubernetes.io/name=storefront')).find((p) => !p.metadata.deletionTimestamp);
  if (!pod) throw new Error('no storefront pod');
  const child = spawn('kubectl', ['-n', TENANT, 'port-forward', `pod/${pod.metadata.name}`, ':8181'], {
    env: { ...process.env, KUBECONFIG: process.env['CLUSTER_KUBECONFIG'] ?? '' },
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        const m = /127\.0\.0\.1:(\d+)/.exec(d);
        if (m?.[1]) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}`)));
    });
    const res = await fetch(`http://127.0.0.1:${port}/v1/data/acl/allow`, { method: 'POST', body: JSON.stringify({ input }) });
    return ((await res.json()) as { result?: unknown }).result;
  } finally {
    child.kill();
  }
}

const WRITE = { principal: { type: 'user', id: 'alice', team: 'blue' }, action: 'write', resource: { type: 'document', id: 'd1', team: 'blue' } };

export function tenantTests(dir: () => string): void {
  it('creates the first tenant as the docs do: the Bundle RolledOut on its OPA sidecar, and kubectl get acl filled', async () => {
    const r = await runDocsBlock('**A first tenant.**', dir(), {}, 300_000);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/condition met/);
    const table = await kubectl(['get', 'acl', '-n', TENANT]);
    for (const row of ['rule.acl.policyagent.dev/team-documents', 'connector.acl.policyagent.dev/storefront', 'bundle.acl.policyagent.dev/storefront-policies']) {
      expect(table).toContain(row);
    }
    const bundle = await kubectlJson<{ status?: { revision?: number; conditions?: { type: string; status: string }[] } }>(['-n', TENANT, 'get', 'bundle', 'storefront-policies']);
    expect(bundle.status?.revision).toBeGreaterThan(0);
    expect(bundle.status?.conditions?.find((c) => c.type === 'RolledOut')?.status).toBe('True');
  });

  it('refuses an invalid Rule at kubectl apply (the API server calls the webhook through the Service) and admits a valid one', async () => {
    const rule = (name: string, condition: string) =>
      `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: ${name}, namespace: ${TENANT}}\nspec: {state: Enforced, subjectType: user, actions: [read], resourceType: report, condition: '${condition}'}\n`;
    const refused = await run('kubectl', ['apply', '-f', '-'], { input: rule('broken', 'principal.team ==') });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/admission webhook .* denied the request/);
    const admitted = await run('kubectl', ['apply', '-f', '-'], { input: rule('reports', 'principal.team == resource.team') });
    expect(admitted.code, admitted.stderr).toBe(0);
    expect((await run('kubectl', ['-n', TENANT, 'get', 'rule', 'broken'])).code).not.toBe(0);
    await kubectl(['-n', TENANT, 'delete', 'rule', 'reports']);
  });

  it("brings a Rule edit to the sidecar's decision", async () => {
    expect(await askSidecar(WRITE)).toBe(false);
    await kubectl(['-n', TENANT, 'patch', 'rule', 'team-documents', '--type=merge', '-p', '{"spec":{"actions":["read","write"]}}']);
    await waitFor('the sidecar allowing write after the edit', async () => (await askSidecar(WRITE)) === true, 120_000);
    await kubectl(['-n', TENANT, 'patch', 'rule', 'team-documents', '--type=merge', '-p', '{"spec":{"actions":["read"]}}']);
    await waitFor('the sidecar denying write again', async () => (await askSidecar(WRITE)) === false, 120_000);
  });

  it('starts an application in the tenant that decides and polls through the Service, with nothing failed', async () => {
    await kubectl(['apply', '-f', '-'], { input: loadManifest() });
    const counts = await waitFor('the load client answering', async () => {
      const c = await loadCounts().catch(() => undefined);
      return c && c.decisions.ok > 100 && c.polls.ok > 5 && c;
    }, 180_000);
    expect(counts.decisions.failed).toBe(0);
    expect(counts.polls.failed).toBe(0);
    expect(counts.allows).toBe(counts.decisions.ok);
  });
}

/** The load client's Pod, API key Secret and ConfigMap (restricted, like everything in shop). */
function loadManifest(): string {
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
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: LOAD, namespace: TENANT, labels: { 'app.kubernetes.io/name': LOAD } },
      spec: {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'load',
            image: IMAGE,
            imagePullPolicy: 'IfNotPresent',
            command: ['node', '/load/load.ts'],
            env: [
              { name: 'ACL_URL', value: 'https://acl-operator.acl-system.svc:8443' },
              { name: 'ACL_TENANT', value: TENANT },
              { name: 'ACL_CONNECTOR', value: 'storefront' },
              { name: 'ACL_BUNDLE', value: 'storefront-policies' },
              { name: 'API_KEY', valueFrom: { secretKeyRef: { name: LOAD, key: 'token' } } },
              { name: 'CONNECTOR_TOKEN_FILE', value: '/var/run/acl-operator/token' },
              { name: 'NODE_EXTRA_CA_CERTS', value: '/var/run/acl-operator/ca.crt' },
              { name: 'DECISIONS_PER_SECOND', value: '50' },
              { name: 'POLLS_PER_SECOND', value: '5' },
            ],
            securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
            volumeMounts: [
              { name: 'load', mountPath: '/load', readOnly: true },
              { name: 'token', mountPath: '/var/run/acl-operator', readOnly: true },
            ],
          },
        ],
        volumes: [
          { name: 'load', configMap: { name: LOAD } },
          { name: 'token', secret: { secretName: 'storefront-token' } },
        ],
      },
    },
  ];
  return objects.map((o) => JSON.stringify(o)).join('\n---\n');
}
