// The operator runs with a ServiceAccount token bound to the roles in deploy/, never as cluster
// admin: both the cluster-wide install (ClusterRole) and the namespaced one (deploy/namespaced/).
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { statusOf } from '../../src/kube/index.ts';
import {
  adminClients,
  apiKeySecret,
  apply,
  directoryYaml,
  deployRbac,
  loadConfig,
  rbacApi,
  ROOT,
  waitFor,
  yamlObjects,
} from '../support/kube.ts';
import { bindRole, describeE2E, docsTenant, rulesOf, serviceAccountConfig, type Tenant } from '../support/e2e.ts';
import { statusReport } from '../support/reports.ts';

const API_KEY = 'e2e-rbac-api-key-0123456789';

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

describeE2E('Kubernetes: the RBAC in deploy/ is enough (real API server)', { timeout: 150_000 }, (e2e) => {
  async function runAndCheck(t: Tenant, kc: KubeConfig, operatorNamespace = t.ns): Promise<void> {
    const { ns, api } = t;
    await t.apply([
      ...docsTenant(ns),
      apiKeySecret(ns, API_KEY),
      directoryYaml(ns, 'people', { entities: [{ type: 'user', id: 'alice', properties: { team: 'blue' } }] }),
    ]);
    // Not cluster admin: this identity cannot even list pods.
    await expect(kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns })).rejects.toSatisfy(
      (err: unknown) => statusOf(err) === 403,
    );

    const op = await e2e.operator({ namespace: ns, operatorNamespace, kubeConfig: kc, tls: { mode: 'secret', name: 'acl-operator-tls' } });
    const { core } = adminClients();
    const tls = await core.readNamespacedSecret({ name: 'acl-operator-tls', namespace: operatorNamespace });
    const ca = Buffer.from(tls.data?.['ca.crt'] ?? '', 'base64').toString('utf8');
    expect(ca).toContain('BEGIN CERTIFICATE');
    const secret = await waitFor('token Secret', async () => core.readNamespacedSecret({ name: 'gateways-token', namespace: ns }));
    expect(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString('utf8')).toBe(ca);
    const token = Buffer.from(secret.data?.['token'] ?? '', 'base64').toString('utf8');
    await t.revision(1);
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
    // The signing key Secret in the operator namespace, and the tenant's acl-opa ConfigMap naming its key.
    const key = await waitFor('the signing key Secret', () =>
      core.readNamespacedSecret({ name: 'acl-signing-key', namespace: operatorNamespace }).catch(() => undefined),
    );
    const kid = key.metadata?.annotations?.['acl.policyagent.dev/key-id'] ?? '';
    await waitFor(
      'the acl-opa ConfigMap',
      async () => (await core.readNamespacedConfigMap({ name: 'acl-opa', namespace: ns }).catch(() => undefined))?.data?.[`${kid}.pem`],
    );
    await waitFor('RolledOut True', async () =>
      ((await api.status('Bundle', 'docs'))['conditions'] as { type: string; status: string }[] | undefined)?.some(
        (c) => c.type === 'RolledOut' && c.status === 'True',
      ),
    );
  }

  it('cluster-wide: ClusterRole acl-operator and the leader-election Role', async () => {
    const t = await e2e.tenant('rbac');
    const ns = t.ns;
    const rbac = rbacApi();
    const objects = deployRbac();
    await apply(
      loadConfig(),
      objects.filter((o) => o.kind === 'ClusterRole'),
    );
    const binding = `e2e-${ns}`;
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: binding },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'acl-operator' },
        subjects: [{ kind: 'ServiceAccount', name: 'acl-operator', namespace: ns }],
      },
    });
    e2e.later(() => rbac.deleteClusterRoleBinding({ name: binding }));
    // The Lease lives in the test namespace here (acl-system in deploy/): the same rules, bound there.
    await bindRole(ns, 'leader-election', rulesOf(objects, 'Role', 'acl-operator-leader-election'), 'acl-operator');
    await bindRole(ns, 'agents', rulesOf(objects, 'Role', 'acl-operator-agents'), 'acl-operator');
    await runAndCheck(t, await serviceAccountConfig(ns, 'acl-operator'));
  });

  it('namespaced: the Roles of deploy/namespaced/ only, no cluster-wide rights', async () => {
    // Two namespaces, as in a real namespaced install: the tenant's, and the operator's own.
    const tenantNs = await e2e.tenant('rbacns');
    const opNs = (await e2e.tenant('rbacop')).ns;
    const tenant = yamlObjects(readFileSync(join(ROOT, 'deploy', 'namespaced', 'tenant-role.yaml'), 'utf8'));
    const operatorNs = yamlObjects(readFileSync(join(ROOT, 'deploy', 'namespaced', 'operator-namespace-role.yaml'), 'utf8'));
    const roles = [
      { ns: tenantNs.ns, name: 'tenant', rules: rulesOf(tenant, 'Role', 'acl-operator') },
      { ns: opNs, name: 'tls', rules: rulesOf(operatorNs, 'Role', 'acl-operator-tls') },
      { ns: opNs, name: 'leader-election', rules: rulesOf(deployRbac(), 'Role', 'acl-operator-leader-election') },
      { ns: opNs, name: 'agents', rules: rulesOf(deployRbac(), 'Role', 'acl-operator-agents') },
    ];
    for (const r of roles) await bindRole(r.ns, r.name, r.rules, 'acl-operator', opNs);
    await runAndCheck(tenantNs, await serviceAccountConfig(opNs, 'acl-operator'), opNs);
  });
});
