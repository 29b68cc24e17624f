// Lint in the cluster, against a real API server: a Rule whose condition reads
// resource.properties.* (the request's shape, never there once properties are flattened) gets a
// Warning condition and one Warning Event; fixing it removes the condition; a Bundle added later
// changes another Rule's findings, and its status follows without an edit of its own.
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { adminClients, bundleYaml, connectorYaml, E2E_KUBECONFIG, ruleYaml, TEAM_RULE, waitFor } from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

type Condition = { type: string; status: string; reason?: string; message?: string };

const warningOf = (status: Record<string, unknown>): Condition | undefined =>
  (status['conditions'] as Condition[] | undefined)?.find((c) => c.type === 'Warning');

describeE2E('Kubernetes: lint findings as Warning conditions and Events (real API server)', { timeout: 90_000 }, (e2e) => {
  it('warns on a Rule reading resource.properties, once, and clears the warning when it is fixed', async () => {
    const t = await e2e.tenant('lint', (ns) => [
      connectorYaml(ns, 'gateways'),
      bundleYaml(ns, 'docs', { connector: 'gateways', entityTypes: ['document'] }),
      ruleYaml(ns, 'team-documents', TEAM_RULE),
      ruleYaml(ns, 'owners', { ...TEAM_RULE, actions: ['delete'], condition: 'resource.properties.ownerID == principal.id' }),
      ruleYaml(ns, 'reports', { ...TEAM_RULE, resourceType: 'report', condition: 'principal.team == resource.team' }),
    ]);
    const { ns, api } = t;
    const { core } = adminClients();
    await e2e.operator({ namespace: ns });

    const warning = await waitFor('Warning condition on Rule owners', async () => warningOf(await api.status('Rule', 'owners')));
    expect(warning).toMatchObject({ type: 'Warning', status: 'True', reason: 'PropertiesPath' });
    expect(warning.message).toMatch(
      /^PropertiesPath: the condition reads resource\.properties\.ownerID, .*Fix: read resource\.ownerID instead$/,
    );
    const lintEvents = async (name: string, reason: string) =>
      (await core.listNamespacedEvent({ namespace: ns })).items.filter(
        (e) => e.type === 'Warning' && e.reason === reason && e.involvedObject.kind === 'Rule' && e.involvedObject.name === name,
      );
    const [event] = await waitFor('PropertiesPath Event', async () => {
      const found = await lintEvents('owners', 'PropertiesPath');
      return found.length > 0 ? found : undefined;
    });
    expect(event?.message).toContain('read resource.ownerID instead');
    // kubectl get shows the code in the CRD's Warning column.
    const listed = spawnSync(process.env['KUBECTL'] || 'kubectl', ['--kubeconfig', E2E_KUBECONFIG ?? '', 'get', 'rules', '-n', ns], {
      encoding: 'utf8',
    });
    expect(listed.stdout).toMatch(/^NAME\s+STATE\s+PHASE\s+SUBJECT\s+ACTIONS\s+RESOURCE\s+SHADOW\s+WARNING\s+AGE$/m);
    expect(listed.stdout).toMatch(/^owners\s+Enforced\s+Enforced\s+user\s+.*\s+PropertiesPath\s+\S+$/m);
    // A clean Rule and the Bundle carry no Warning condition.
    expect(warningOf(await api.status('Rule', 'team-documents'))).toBeUndefined();
    expect((await api.status('Rule', 'team-documents'))['phase']).toBe('Enforced');
    expect(warningOf(await api.status('Bundle', 'docs'))).toBeUndefined();
    // The report rule is in no bundle (docs selects documents only).
    expect(await waitFor('RuleNotBundled on reports', async () => warningOf(await api.status('Rule', 'reports')))).toMatchObject({
      reason: 'RuleNotBundled',
    });

    // Fixed: the condition goes, and no second Event comes.
    await api.patchSpec('Rule', 'owners', { condition: 'resource.ownerID == principal.id' });
    const fixed = await waitFor('Rule owners without Warning', async () => {
      const s = await api.status('Rule', 'owners');
      return s['observedGeneration'] === 2 && !warningOf(s) ? s : undefined;
    });
    expect((fixed['conditions'] as Condition[]).map((c) => c.type)).toEqual(['Ready']);
    expect(await lintEvents('owners', 'PropertiesPath')).toHaveLength(1);

    // A Bundle of every rule selects the report rule: its status follows, though the Rule did not change.
    const before = (await api.get('Rule', 'reports')).metadata.generation;
    await t.apply([bundleYaml(ns, 'all', { connector: 'gateways' })]);
    await waitFor('Rule reports without Warning', async () => !warningOf(await api.status('Rule', 'reports')));
    expect((await api.get('Rule', 'reports')).metadata.generation).toBe(before);
  });
});
