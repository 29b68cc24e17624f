// Rules and Bundles against a real API server: revisions, phases, conditions, translations.
import { VersionApi } from '@kubernetes/client-node';
import { beforeAll, expect, it } from 'vitest';
import type { Operator } from '../../src/modes/index.ts';
import { apiKeySecret, fetchBundle, loadConfig, metricValue, ruleYaml, TEAM_RULE, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

const API_KEY = 'e2e-api-key-0123456789abcdef';

describeE2E('Kubernetes: rules and bundles (real API server)', { timeout: 120_000 }, (e2e) => {
  beforeAll(async () => {
    const server = loadConfig().getCurrentCluster()?.server;
    const version = await loadConfig().makeApiClient(VersionApi).getCode();
    console.log(`e2e: running against the real API server at ${server} (Kubernetes ${version.gitVersion})`);
  });

  async function setup(prefix: string) {
    const t = await e2e.tenant(prefix, (ns) => [...docsTenant(ns, 'team-documents'), apiKeySecret(ns, API_KEY)]);
    return { ...t, o: await e2e.operator({ namespace: t.ns }) };
  }

  const decide = async (o: Operator, body: unknown): Promise<{ decision: string; policyId?: string }> => {
    const res = await fetch(`${o.apiUrl}/authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { decision: string; policyId?: string };
  };

  it('builds revision 1 at start, then +1 when a Rule is applied, and reports Enforced', async () => {
    const { ns, api, o, ...t } = await setup('apply');
    const first = await t.revision(1);
    expect(first).toMatchObject({
      phase: 'Ready',
      revision: 1,
      ruleCount: 1,
      observedGeneration: 1,
      agents: { reporting: 0, rollout: '0/0' },
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Built' },
        // Signed by the key the operator made at its first start (Secret acl-signing-key).
        { type: 'Signed', status: 'True', reason: 'Signed' },
        { type: 'RolledOut', status: 'Unknown', reason: 'NoAgents' },
        { type: 'KeyRotated', status: 'True', reason: 'OneKey' },
      ],
      signingKey: expect.stringMatching(/^acl-[0-9a-f]{16}$/),
    });
    expect(await api.status('Rule', 'team-documents')).toMatchObject({
      phase: 'Enforced',
      observedGeneration: 1,
      translation: { status: 'Current', generation: 1 },
    });
    expect((await api.status('Rule', 'team-documents'))['translation']).toMatchObject({
      rego: expect.stringContaining('input.principal.team == input.resource.team'),
    });

    const token = await t.token();
    const served = await fetchBundle(o, ns, 'gateways', 'docs', token);
    expect(served.status).toBe(200);
    expect(served.etag).toBe(first['etag']);

    await t.apply([
      ruleYaml(ns, 'owners-delete', {
        state: 'Enforced',
        subjectType: 'user',
        actions: ['delete'],
        resourceType: 'document',
        condition: 'principal.id == resource.owner',
      }),
    ]);
    const second = await t.revision(2);
    expect(second).toMatchObject({ revision: 2, ruleCount: 2 });
    expect(second['etag']).not.toBe(first['etag']);
    expect((await fetchBundle(o, ns, 'gateways', 'docs', token, served.etag ?? undefined)).status).toBe(200);
    await waitFor('rule Enforced', async () => (await api.status('Rule', 'owners-delete'))['phase'] === 'Enforced');
    expect(
      await decide(o, { subject: { type: 'user', id: 'ann' }, action: 'delete', resource: { type: 'document', id: 'd', owner: 'ann' } }),
    ).toMatchObject({ decision: 'allow', policyId: `${ns}/owners-delete` });
  });

  it('marks an invalid Rule InvalidSpec while the other rules keep being served', async () => {
    const { ns, api, o, ...t } = await setup('invalid');
    await t.revision(1);
    await t.apply([ruleYaml(ns, 'broken', { ...TEAM_RULE, condition: 'principal.team ==== resource.team' })]);
    const status = await waitFor('broken rule Invalid', async () => {
      const s = await api.status('Rule', 'broken');
      return s['phase'] === 'Invalid' ? s : undefined;
    });
    expect(status).toMatchObject({
      phase: 'Invalid',
      observedGeneration: 1,
      translation: { status: 'Error', generation: 1 },
      conditions: [
        { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: expect.stringMatching(/syntax error at line 1, column \d+/) },
      ],
    });
    expect(await api.status('Bundle', 'docs')).toMatchObject({ revision: 1, ruleCount: 1 });
    expect(
      await decide(o, {
        subject: { type: 'user', id: 'a', team: 'x' },
        action: 'read',
        resource: { type: 'document', id: 'd', team: 'x' },
      }),
    ).toMatchObject({ decision: 'allow' });

    // An invalid edit of a good rule keeps its last good version in force.
    await api.patchSpec('Rule', 'team-documents', { condition: 'principal.team ==' });
    const stale = await waitFor('team rule Invalid', async () => {
      const s = await api.status('Rule', 'team-documents');
      return s['phase'] === 'Invalid' ? s : undefined;
    });
    expect(stale).toMatchObject({ observedGeneration: 2, translation: { status: 'Stale', generation: 1 } });
    expect(await api.status('Bundle', 'docs')).toMatchObject({ revision: 1 });
    expect(
      await decide(o, {
        subject: { type: 'user', id: 'a', team: 'x' },
        action: 'read',
        resource: { type: 'document', id: 'd', team: 'x' },
      }),
    ).toMatchObject({ decision: 'allow' });
  });

  it('deploys an Approved rule and reports it Enforced; regenerate re-translates; Draft stays out', async () => {
    const { ns, api, ...t } = await setup('approved');
    await t.revision(1);
    await t.apply([
      ruleYaml(ns, 'approved', { state: 'Approved', subjectType: 'user', actions: ['share'], resourceType: 'document' }),
      ruleYaml(ns, 'draft', { state: 'Draft', subjectType: 'user', actions: ['purge'], resourceType: 'document' }),
    ]);
    await waitFor('approved rule Enforced', async () => (await api.status('Rule', 'approved'))['phase'] === 'Enforced');
    expect(
      await waitFor('draft status', async () => {
        const d = await api.status('Rule', 'draft');
        return d['phase'] ? d : undefined;
      }),
    ).toMatchObject({ phase: 'Draft', conditions: [{ reason: 'NotDeployed' }] });
    expect(await t.revision(2)).toMatchObject({ ruleCount: 2 });

    await api.annotate('Rule', 'approved', { 'acl.policyagent.dev/regenerate': 'now' });
    await waitFor(
      'regenerate honoured',
      async () => ((await api.status('Rule', 'approved'))['translation'] as { regenerate?: string } | undefined)?.regenerate === 'now',
    );
    expect(await api.status('Bundle', 'docs')).toMatchObject({ revision: 2 });
  });

  it('does not rewrite status when nothing changed', async () => {
    const { api, o, ...t } = await setup('quiet');
    await t.revision(1);
    await o.controller.idle();
    const versions = async (): Promise<string[]> =>
      Promise.all(
        [api.get('Rule', 'team-documents'), api.get('Connector', 'gateways'), api.get('Bundle', 'docs')].map(
          async (p) => (await p).metadata.resourceVersion,
        ),
      );
    const before = await versions();
    const writes = await metricValue(o, 'acl_status_writes_total');
    for (const key of o.source.keys()) o.controller.enqueue(key);
    await o.controller.idle();
    expect(await versions()).toEqual(before);
    expect(await metricValue(o, 'acl_status_writes_total')).toBe(writes);
    expect(await metricValue(o, 'acl_reconcile_total', { kind: 'Rule' })).toBeGreaterThan(1);
  });
});
