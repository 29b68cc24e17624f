// The console's actions in Kubernetes mode against a real API server: a JSON merge patch of one spec
// field or annotation, sent with the operator's own RBAC from deploy/, read back as kubectl sees it,
// and the outcomes a person reads when the object is gone, a value is refused or RBAC is missing.
import type { KubeConfig, V1PolicyRule } from '@kubernetes/client-node';
import pino from 'pino';
import { expect, it } from 'vitest';
import { activeChanges, regenerateChanges, rotateChanges } from '../../src/controller/index.ts';
import { clientsFor, createObjectPatcher } from '../../src/kube/index.ts';
import { adminClients, connectorYaml, deployRbac, ruleYaml, TEAM_RULE, waitFor } from '../support/kube.ts';
import { bindRole, describeE2E, rulesOf, serviceAccountConfig } from '../support/e2e.ts';

const REGENERATE = 'acl.policyagent.dev/regenerate';
const log = pino({ level: 'silent' });

/** A kubeconfig for a ServiceAccount of `ns` holding, in `ns` only, the given rules. */
async function identityWith(ns: string, rules: V1PolicyRule[]): Promise<KubeConfig> {
  await bindRole(ns, 'operator', rules, 'operator');
  return serviceAccountConfig(ns, 'operator');
}

/** The rules of the ClusterRole acl-operator in deploy/20-rbac.yaml. */
const operatorRules = (): V1PolicyRule[] => rulesOf(deployRbac(), 'ClusterRole', 'acl-operator');

describeE2E('Kubernetes: console actions patch the object (real API server)', { timeout: 120_000 }, (e2e) => {
  const setup = (prefix: string) =>
    e2e.tenant(prefix, (ns) => [
      connectorYaml(ns, 'gateways', { displayName: 'Gateways', tokenRotation: 2 }),
      { ...ruleYaml(ns, 'team', TEAM_RULE), metadata: { name: 'team', namespace: ns, annotations: { owner: 'docs-team' } } },
    ]);

  it("patches a Connector's spec.active and a Rule's regenerate annotation with deploy/'s RBAC, leaving every other field", async () => {
    const { ns, api } = await setup('patch');
    const patcher = createObjectPatcher(clientsFor(await identityWith(ns, operatorRules())), log);
    await e2e.operator({ namespace: ns });
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
