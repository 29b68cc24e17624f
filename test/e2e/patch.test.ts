// The console's actions in Kubernetes mode against a real API server: a JSON merge patch of one spec
// field or annotation, sent with the operator's own RBAC from deploy/, read back as kubectl sees it,
// and the outcomes a person reads when the object is gone, a value is refused or RBAC is missing.
import { KubeConfig, type V1PolicyRule } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { activeChanges, regenerateChanges, rotateChanges } from '../../src/controller/index.ts';
import { clientsFor, createObjectPatcher } from '../../src/kube/index.ts';
import type { Operator } from '../../src/modes/index.ts';
import {
  adminClients,
  apply,
  connectorYaml,
  createNamespace,
  customApi,
  deployRbac,
  E2E_KUBECONFIG,
  ensureCrds,
  loadConfig,
  rbacApi,
  ruleYaml,
  startE2EOperator,
  TEAM_RULE,
  waitFor,
} from '../support/kube.ts';

const REGENERATE = 'acl.policyagent.dev/regenerate';
const log = pino({ level: 'silent' });

/** A kubeconfig for a ServiceAccount of `ns` holding, in `ns` only, the given rules. */
async function identityWith(ns: string, rules: V1PolicyRule[]): Promise<KubeConfig> {
  const { core } = adminClients();
  const rbac = rbacApi();
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'operator' }, rules } });
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'operator' } } });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'operator' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'operator' },
      subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: ns }],
    },
  });
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'operator-token', annotations: { 'kubernetes.io/service-account.name': 'operator' } },
      type: 'kubernetes.io/service-account-token',
    },
  });
  const token = await waitFor('service account token', async () => {
    const s = await core.readNamespacedSecret({ name: 'operator-token', namespace: ns });
    return s.data?.['token'] ? Buffer.from(s.data['token'], 'base64').toString('utf8') : undefined;
  });
  const cluster = loadConfig().getCurrentCluster();
  if (!cluster) throw new Error('E2E_KUBECONFIG has no current cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'operator', token }],
    contexts: [{ name: 'operator', cluster: cluster.name, user: 'operator' }],
    currentContext: 'operator',
  });
  return kc;
}

/** The rules of the ClusterRole acl-operator in deploy/20-rbac.yaml. */
function operatorRules(): V1PolicyRule[] {
  const role = deployRbac().find((o) => o.kind === 'ClusterRole' && o.metadata?.name === 'acl-operator') as { rules?: V1PolicyRule[] };
  if (!role.rules) throw new Error('deploy/20-rbac.yaml has no ClusterRole acl-operator');
  return role.rules;
}

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: console actions patch the object (real API server)', { timeout: 120_000 }, () => {
  let op: Operator | undefined;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(ensureCrds);
  afterEach(async () => {
    await op?.stop();
    op = undefined;
    await drop?.();
  });

  async function setup(prefix: string): Promise<{ ns: string; api: ReturnType<typeof customApi> }> {
    const n = await createNamespace(prefix);
    drop = n.drop;
    await apply(loadConfig(), [
      connectorYaml(n.name, 'gateways', { displayName: 'Gateways', tokenRotation: 2 }),
      { ...ruleYaml(n.name, 'team', TEAM_RULE), metadata: { name: 'team', namespace: n.name, annotations: { owner: 'docs-team' } } },
    ]);
    return { ns: n.name, api: customApi(n.name) };
  }

  it("patches a Connector's spec.active and a Rule's regenerate annotation with deploy/'s RBAC, leaving every other field", async () => {
    const { ns, api } = await setup('patch');
    const patcher = createObjectPatcher(clientsFor(await identityWith(ns, operatorRules())), log);
    op = await startE2EOperator({ namespace: ns });
    await waitFor('Rule Enforced', async () => (await api.status('Rule', 'team'))['phase'] === 'Enforced');

    const connector = { kind: 'Connector', namespace: ns, name: 'gateways' } as const;
    expect(await patcher.edit(connector, activeChanges(false))).toEqual({
      ok: true,
      where: `Connector ${ns}/gateways (kubectl -n ${ns} get connector gateways -o yaml)`,
    });
    const rule = { kind: 'Rule', namespace: ns, name: 'team' } as const;
    expect(await patcher.edit(rule, regenerateChanges('2026-05-01T10:00:00.000Z'))).toMatchObject({ ok: true });

    const c = await api.get('Connector', 'gateways');
    // Merged, not replaced (an API server that applies the CRD's defaults adds revoked: false).
    expect(c['spec']).toMatchObject({ displayName: 'Gateways', tokenRotation: 2, active: false });
    const r = await api.get('Rule', 'team');
    expect(r.metadata).toMatchObject({ generation: 1, annotations: { owner: 'docs-team', [REGENERATE]: '2026-05-01T10:00:00.000Z' } });
    expect(r['spec']).toEqual({ ...TEAM_RULE });
    // The operator sees both as it sees kubectl's edits.
    await waitFor('Connector Inactive', async () => (await api.status('Connector', 'gateways'))['phase'] === 'Inactive');
    await waitFor(
      'the new regenerate value translated',
      async () =>
        ((await api.status('Rule', 'team'))['translation'] as { regenerate?: string } | undefined)?.regenerate ===
        '2026-05-01T10:00:00.000Z',
    );
    // Rotate reads the current spec: from 2 to 3.
    const current = { kind: 'Connector', metadata: { name: 'gateways', namespace: ns }, raw: c } as const;
    expect(await patcher.edit(connector, rotateChanges(current))).toMatchObject({ ok: true });
    expect((await api.get('Connector', 'gateways'))['spec']).toMatchObject({ tokenRotation: 3, active: false });
  });

  it('says the object no longer exists (404), and passes on a value the CRD refuses as a sentence (422)', async () => {
    const { ns } = await setup('patchfail');
    const patcher = createObjectPatcher(adminClients(), log);
    const gone = await patcher.edit({ kind: 'Connector', namespace: ns, name: 'nobody' }, activeChanges(true));
    expect(gone).toEqual({ ok: false, status: 404, message: `Connector ${ns}/nobody no longer exists.` });
    const refused = await patcher.edit({ kind: 'Connector', namespace: ns, name: 'gateways' }, [
      { path: ['spec', 'tokenRotation'], value: -1 },
    ]);
    expect(refused).toMatchObject({ ok: false, status: 422 });
    expect(refused.ok ? '' : refused.message).toMatch(
      new RegExp(`^The API server refused the change to Connector ${ns}/gateways: .*spec\\.tokenRotation.*\\.$`),
    );
    expect(refused.ok ? '' : refused.message).not.toMatch(/\n|at .*\.ts/);
  });

  it('names the missing RBAC when the operator may not patch', async () => {
    const { ns } = await setup('patchrbac');
    const withoutPatch = operatorRules().filter((r) => !r.verbs.includes('patch'));
    const patcher = createObjectPatcher(clientsFor(await identityWith(ns, withoutPatch)), log);
    const outcome = await patcher.edit({ kind: 'Rule', namespace: ns, name: 'team' }, regenerateChanges('2026-05-01T10:00:00.000Z'));
    expect(outcome).toEqual({
      ok: false,
      status: 500,
      message:
        'The operator may not patch rules: its RBAC lacks the patch verb (apply the current deploy/20-rbac.yaml, or deploy/namespaced/ with --namespaces).',
    });
  });
});
