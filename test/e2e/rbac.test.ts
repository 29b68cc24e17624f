// The operator runs with a ServiceAccount token bound to the roles in deploy/, never as cluster
// admin: both the cluster-wide install (ClusterRole) and the namespaced one (deploy/namespaced/).
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type KubernetesObject, type V1PolicyRule } from '@kubernetes/client-node';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Operator } from '../../src/modes/index.ts';
import { statusOf } from '../../src/kube/index.ts';
import {
  adminClients,
  apiKeySecret,
  apply,
  bundleYaml,
  connectorYaml,
  createNamespace,
  directoryYaml,
  customApi,
  deployRbac,
  E2E_KUBECONFIG,
  ensureCrds,
  loadConfig,
  rbacApi,
  ROOT,
  ruleYaml,
  startE2EOperator,
  TEAM_RULE,
  waitFor,
  yamlObjects,
} from '../support/kube.ts';
import { statusReport } from '../support/reports.ts';

const API_KEY = 'e2e-rbac-api-key-0123456789';

function rulesOf(objects: readonly KubernetesObject[], kind: string, name: string): V1PolicyRule[] {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name) as
    | (KubernetesObject & { rules?: V1PolicyRule[] })
    | undefined;
  if (!o?.rules) throw new Error(`deploy/ has no ${kind} ${name}`);
  return o.rules;
}

/** A ServiceAccount in `ns` and a kubeconfig with its token (works on every version: token Secret). */
async function serviceAccountConfig(ns: string): Promise<KubeConfig> {
  const { core } = adminClients();
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'acl-operator' } } });
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'acl-operator-sa-token', annotations: { 'kubernetes.io/service-account.name': 'acl-operator' } },
      type: 'kubernetes.io/service-account-token',
    },
  });
  const token = await waitFor('service account token', async () => {
    const s = await core.readNamespacedSecret({ name: 'acl-operator-sa-token', namespace: ns });
    return s.data?.['token'] ? Buffer.from(s.data['token'], 'base64').toString('utf8') : undefined;
  });
  const admin = loadConfig();
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('no cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'sa', token }],
    contexts: [{ name: 'sa', cluster: cluster.name, user: 'sa' }],
    currentContext: 'sa',
  });
  return kc;
}

function httpsPost(url: string, ca: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', ca, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function httpsGet(url: string, ca: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: the RBAC in deploy/ is enough (real API server)', { timeout: 150_000 }, () => {
  let op: Operator | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(ensureCrds);
  afterEach(async () => {
    await op?.stop();
    op = undefined;
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function runAndCheck(ns: string, kc: KubeConfig, operatorNamespace = ns): Promise<void> {
    await apply(loadConfig(), [
      connectorYaml(ns, 'gateways'),
      bundleYaml(ns, 'docs', { connector: 'gateways' }),
      ruleYaml(ns, 'team', TEAM_RULE),
      apiKeySecret(ns, API_KEY),
      directoryYaml(ns, 'people', { entities: [{ type: 'user', id: 'alice', properties: { team: 'blue' } }] }),
    ]);
    // Not cluster admin: this identity cannot even list pods.
    await expect(kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns })).rejects.toSatisfy(
      (err: unknown) => statusOf(err) === 403,
    );

    op = await startE2EOperator({ namespace: ns, operatorNamespace, kubeConfig: kc, tls: { mode: 'secret', name: 'acl-operator-tls' } });
    const api = customApi(ns);
    const { core } = adminClients();
    const tls = await core.readNamespacedSecret({ name: 'acl-operator-tls', namespace: operatorNamespace });
    const ca = Buffer.from(tls.data?.['ca.crt'] ?? '', 'base64').toString('utf8');
    expect(ca).toContain('BEGIN CERTIFICATE');
    const secret = await waitFor('token Secret', async () => core.readNamespacedSecret({ name: 'gateways-token', namespace: ns }));
    expect(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString('utf8')).toBe(ca);
    const token = Buffer.from(secret.data?.['token'] ?? '', 'base64').toString('utf8');
    await waitFor('bundle status', async () => (await api.status('Bundle', 'docs'))['revision'] === 1);
    expect(await api.status('Rule', 'team')).toMatchObject({ phase: 'Enforced' });
    expect(await api.status('Connector', 'gateways')).toMatchObject({ phase: 'Active' });
    // Directories are watched and their status written (directories, directories/status).
    await waitFor('directory status', async () => (await api.status('Directory', 'people'))['entityCount'] === 1);
    // The OPA view: HTTPS with the CA from the token Secret, the token from the same Secret.
    expect(
      await httpsGet(`${op.apiUrl}/${ns}/connectors/policyagent/gateways/bundles/docs`, ca, { authorization: `Bearer ${token}` }),
    ).toBe(200);
    const events = await waitFor('TokenIssued event', async () => {
      const list = await core.listNamespacedEvent({ namespace: ns });
      return list.items.some((e) => e.reason === 'TokenIssued' && e.involvedObject.name === 'gateways') ? list : undefined;
    });
    expect(events.items.some((e) => e.reason === 'Built' && e.involvedObject.kind === 'Bundle')).toBe(true);
    // An OPA's status report: the replica shares the agent through its ConfigMap (configmaps in its namespace).
    const reported = await httpsPost(
      `${op.apiUrl}/${ns}/connectors/policyagent/gateways/status`,
      ca,
      { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      JSON.stringify(statusReport('opa-rbac', { docs: { revision: '1' } })),
    );
    expect(reported).toBe(200);
    await waitFor('the agents ConfigMap', async () => {
      const list = await core.listNamespacedConfigMap({ namespace: operatorNamespace, labelSelector: 'acl.policyagent.dev/agents=true' });
      return list.items.length === 1;
    });
    await waitFor('RolledOut True', async () =>
      ((await api.status('Bundle', 'docs'))['conditions'] as { type: string; status: string }[] | undefined)?.some(
        (c) => c.type === 'RolledOut' && c.status === 'True',
      ),
    );
  }

  it('cluster-wide: ClusterRole acl-operator and the leader-election Role', async () => {
    const n = await createNamespace('rbac');
    cleanups.push(n.drop);
    const rbac = rbacApi();
    const objects = deployRbac();
    await apply(
      loadConfig(),
      objects.filter((o) => o.kind === 'ClusterRole'),
    );
    const binding = `e2e-${n.name}`;
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: binding },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'acl-operator' },
        subjects: [{ kind: 'ServiceAccount', name: 'acl-operator', namespace: n.name }],
      },
    });
    cleanups.push(async () => {
      await rbac.deleteClusterRoleBinding({ name: binding });
    });
    // The Lease lives in the test namespace here (acl-system in deploy/): the same rules, bound there.
    await rbac.createNamespacedRole({
      namespace: n.name,
      body: { metadata: { name: 'leader-election' }, rules: rulesOf(objects, 'Role', 'acl-operator-leader-election') },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: n.name,
      body: {
        metadata: { name: 'leader-election' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'leader-election' },
        subjects: [{ kind: 'ServiceAccount', name: 'acl-operator', namespace: n.name }],
      },
    });
    await rbac.createNamespacedRole({
      namespace: n.name,
      body: { metadata: { name: 'agents' }, rules: rulesOf(objects, 'Role', 'acl-operator-agents') },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: n.name,
      body: {
        metadata: { name: 'agents' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agents' },
        subjects: [{ kind: 'ServiceAccount', name: 'acl-operator', namespace: n.name }],
      },
    });
    await runAndCheck(n.name, await serviceAccountConfig(n.name));
  });

  it('namespaced: the Roles of deploy/namespaced/ only, no cluster-wide rights', async () => {
    // Two namespaces, as in a real namespaced install: the tenant's, and the operator's own.
    const tenantNs = await createNamespace('rbacns');
    cleanups.push(tenantNs.drop);
    const opNs = await createNamespace('rbacop');
    cleanups.push(opNs.drop);
    const rbac = rbacApi();
    const tenant = yamlObjects(readFileSync(join(ROOT, 'deploy', 'namespaced', 'tenant-role.yaml'), 'utf8'));
    const operatorNs = yamlObjects(readFileSync(join(ROOT, 'deploy', 'namespaced', 'operator-namespace-role.yaml'), 'utf8'));
    const roles = [
      { ns: tenantNs.name, name: 'tenant', rules: rulesOf(tenant, 'Role', 'acl-operator') },
      { ns: opNs.name, name: 'tls', rules: rulesOf(operatorNs, 'Role', 'acl-operator-tls') },
      { ns: opNs.name, name: 'leader-election', rules: rulesOf(deployRbac(), 'Role', 'acl-operator-leader-election') },
      { ns: opNs.name, name: 'agents', rules: rulesOf(deployRbac(), 'Role', 'acl-operator-agents') },
    ];
    for (const r of roles) {
      await rbac.createNamespacedRole({ namespace: r.ns, body: { metadata: { name: r.name }, rules: r.rules } });
      await rbac.createNamespacedRoleBinding({
        namespace: r.ns,
        body: {
          metadata: { name: r.name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: r.name },
          subjects: [{ kind: 'ServiceAccount', name: 'acl-operator', namespace: opNs.name }],
        },
      });
    }
    await runAndCheck(tenantNs.name, await serviceAccountConfig(opNs.name), opNs.name);
  });
});
