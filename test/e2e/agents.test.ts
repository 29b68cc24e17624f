// OPA agents in Kubernetes mode, against a real API server: status reports turn into Bundle status
// (agents, RolledOut), kubectl get bundles shows the AGENTS column, kubectl wait on RolledOut is how
// a pipeline waits for a change to reach every sidecar, and however many reports arrive, status is
// written at a bounded rate. Agents are simulated with real OPA reports (test/support/reports.ts);
// test/opa/fleet.test.ts runs real OPAs.
import { execFileSync, spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { Operator } from '../../src/modes/index.ts';
import { adminClients, apiKeySecret, customApi, E2E_KUBECONFIG, metricValue, tableOf, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';
import { statusReport } from '../support/reports.ts';

const API_KEY = 'e2e-agents-api-key-0123456789';
const KUBECTL = ((): boolean => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describeE2E('Kubernetes: OPA agents and RolledOut (real API server)', { timeout: 120_000 }, (e2e) => {
  async function setup(prefix: string, agentStatusIntervalMs: number) {
    const t = await e2e.tenant(prefix, (ns) => docsTenant(ns, 'team-documents'));
    const o = await e2e.operator({ namespace: t.ns, agentStatusIntervalMs });
    return { ...t, token: await t.token(), o };
  }

  async function report(
    o: Operator,
    ns: string,
    token: string,
    id: string,
    revision: string,
    extra: { code?: string; message?: string; httpCode?: number } = {},
  ): Promise<void> {
    const res = await fetch(`${o.apiUrl}/${ns}/connectors/policyagent/gateways/status`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify(statusReport(id, { docs: { revision, ...extra } })),
    });
    expect(res.status).toBe(200);
  }

  const rolledOut = async (api: ReturnType<typeof customApi>): Promise<Record<string, unknown> | undefined> =>
    ((await api.status('Bundle', 'docs'))['conditions'] as Record<string, unknown>[] | undefined)?.find((c) => c['type'] === 'RolledOut');

  it('writes RolledOut and the AGENTS column from status reports, and follows a rule edit', async () => {
    const { ns, api, token, o } = await setup('agents', 200);
    expect(await waitFor('RolledOut Unknown before any agent', async () => (await rolledOut(api))?.['reason'] === 'NoAgents')).toBe(true);
    for (const id of ['opa-a', 'opa-b', 'opa-c']) await report(o, ns, token, id, '1');
    await waitFor('RolledOut True with 3/3', async () => {
      const s = await api.status('Bundle', 'docs');
      return (await rolledOut(api))?.['status'] === 'True' && (s['agents'] as { rollout?: string } | undefined)?.rollout === '3/3';
    });
    expect((await api.status('Bundle', 'docs'))['agents']).toEqual({ reporting: 3, current: 3, behind: 0, failing: 0, rollout: '3/3' });
    // What kubectl get bundles prints: the server fills the CRD's printer columns.
    const [row] = await tableOf(`/apis/acl.policyagent.dev/v1alpha1/namespaces/${ns}/bundles`);
    expect(row).toMatchObject({ Name: 'docs', Phase: 'Ready', Revision: 1, Agents: '3/3', 'Rolled-Out': 'True' });
    if (KUBECTL) {
      const printed = execFileSync('kubectl', ['--kubeconfig', E2E_KUBECONFIG as string, 'get', 'bundles', '-n', ns], { encoding: 'utf8' });
      expect(printed).toMatch(/^NAME +CONNECTOR +PHASE +REVISION +RULES +AGENTS +LAST-SYNC +WARNING +AGE$/m);
      expect(printed).toMatch(/^docs +gateways +Ready +1 +1 +3\/3 +/m);
    }

    await customApi(ns).patchSpec('Rule', 'team-documents', { actions: ['read', 'write'] });
    await waitFor(
      'revision 2 and RolledOut False',
      async () => (await api.status('Bundle', 'docs'))['revision'] === 2 && (await rolledOut(api))?.['status'] === 'False',
    );
    expect(await rolledOut(api)).toMatchObject({
      reason: 'AgentsBehind',
      message: expect.stringMatching(/^0 of 3 agent\(s\) run revision 2; 3 behind/),
    });
    await report(o, ns, token, 'opa-a', '2');
    await report(o, ns, token, 'opa-b', '2');
    await report(o, ns, token, 'opa-c', '2', { code: 'bundle_error', message: 'server replied with Unauthorized', httpCode: 401 });
    await waitFor('RolledOut False naming the failing agent', async () =>
      String((await rolledOut(api))?.['message']).includes('opa-c failing (401: server replied with Unauthorized'),
    );
    expect((await api.status('Bundle', 'docs'))['agents']).toMatchObject({ current: 2, failing: 1, rollout: '2/3' });
  });

  it.skipIf(!KUBECTL)('is what kubectl wait --for=condition=RolledOut waits on', async () => {
    const { ns, token, o } = await setup('wait', 200);
    await report(o, ns, token, 'opa-a', '0');
    const waited = new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn('kubectl', [
        '--kubeconfig',
        E2E_KUBECONFIG as string,
        'wait',
        '--for=condition=RolledOut',
        `bundle/docs`,
        '-n',
        ns,
        '--timeout=60s',
      ]);
      let out = '';
      p.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      p.stderr.on('data', (c: Buffer) => {
        out += c.toString();
      });
      p.on('exit', (code) => resolve({ code, out }));
    });
    // The agent reaches the served revision; the condition turns True and kubectl wait returns.
    await report(o, ns, token, 'opa-a', '1');
    const { code, out } = await waited;
    expect(out).toContain('condition met');
    expect(code).toBe(0);
  });

  it('writes Bundle status at a bounded rate however many agents report', async () => {
    const intervalMs = 1000;
    const { ns, api, token, o, revision } = await setup('rate', intervalMs);
    await revision(1);
    await o.controller.idle();
    const before = await metricValue(o, 'acl_status_writes_total', { kind: 'Bundle' });
    // 100 agents, each reporting 30 times, half of them flipping between revisions and failures:
    // 3,000 reports, most changing what status shows, over a few seconds.
    const started = Date.now();
    let reports = 0;
    for (let round = 0; round < 30; round++) {
      await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          // Rounds 0, 2, ... 28 flip half the agents; the last round (29) leaves every one current.
          const flip = i % 2 === 0 && round % 2 === 0 && round < 29;
          await report(
            o,
            ns,
            token,
            `opa-${i}`,
            flip ? '0' : '1',
            flip && i % 4 === 0 ? { code: 'bundle_error', message: 'x', httpCode: 500 } : {},
          );
          reports++;
        }),
      );
    }
    const elapsedMs = Date.now() - started;
    // The last round left every agent current: the final status says so.
    await waitFor(
      'RolledOut True 100/100',
      async () =>
        (await rolledOut(api))?.['status'] === 'True' &&
        ((await api.status('Bundle', 'docs'))['agents'] as { rollout?: string }).rollout === '100/100',
    );
    await o.controller.idle();
    const writes = (await metricValue(o, 'acl_status_writes_total', { kind: 'Bundle' })) - before;
    expect(reports).toBe(3000);
    // At most one refresh per interval, plus the first at once and the last.
    expect(writes).toBeGreaterThanOrEqual(2);
    expect(writes).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / intervalMs) + 2);
    console.log(`e2e: ${reports} status reports in ${elapsedMs} ms → ${writes} Bundle status writes`);
  });

  describe('with two replicas', () => {
    it("counts the agents every replica hears: RolledOut speaks for the whole fleet, not the leader's share", async () => {
      const t = await e2e.tenant('agentsha', (ns) => [...docsTenant(ns, 'team-documents'), apiKeySecret(ns, API_KEY)]);
      const { ns, api } = t;
      const a = await e2e.operator({ namespace: ns, identity: 'replica-a', agentStatusIntervalMs: 200, agentPublishIntervalMs: 100 });
      await waitFor('replica-a leads', () => a.elector.isLeader());
      const b = await e2e.operator({ namespace: ns, identity: 'replica-b', agentStatusIntervalMs: 200, agentPublishIntervalMs: 100 });
      const token = await t.token();
      await waitFor('revision 1 on both', () =>
        [a, b].every((x) => x.store.snapshot().tenants.get(ns)?.bundles.get('docs')?.built.revision === 1),
      );
      // Two sidecars reach the leader, two the follower (the Service balances connections).
      await report(a, ns, token, 'via-a-1', '1');
      await report(a, ns, token, 'via-a-2', '1');
      await report(b, ns, token, 'via-b-1', '1');
      await report(b, ns, token, 'via-b-2', '0');
      await waitFor(
        'the leader counts all four, one behind',
        async () => ((await api.status('Bundle', 'docs'))['agents'] as { rollout?: string } | undefined)?.rollout === '3/4',
      );
      expect(await rolledOut(api)).toMatchObject({
        status: 'False',
        reason: 'AgentsBehind',
        message: expect.stringContaining('via-b-2 behind (on revision 0)'),
      });
      // The follower's agent catches up: the leader hears of it through the follower's ConfigMap.
      await report(b, ns, token, 'via-b-2', '1');
      await waitFor(
        'RolledOut True 4/4',
        async () =>
          (await rolledOut(api))?.['status'] === 'True' &&
          ((await api.status('Bundle', 'docs'))['agents'] as { rollout?: string }).rollout === '4/4',
      );
      // Either replica answers for the whole fleet.
      for (const x of [a, b]) {
        const res = await fetch(`${x.apiUrl}/${ns}/connectors/policyagent/gateways/bundles/docs/agents`, {
          headers: { Authorization: `Bearer ${API_KEY}` },
        });
        const body = (await res.json()) as { agents: { rollout: string }; list: { id: string }[] };
        expect(body.agents.rollout, x.identity).toBe('4/4');
        expect(body.list.map((l) => l.id).sort()).toEqual(['via-a-1', 'via-a-2', 'via-b-1', 'via-b-2']);
      }
      // A replica that stops takes its ConfigMap with it: its agents are no longer counted (they report elsewhere next).
      await b.stop();
      await waitFor(
        'the leader counts its own two',
        async () => ((await api.status('Bundle', 'docs'))['agents'] as { rollout?: string }).rollout === '2/2',
      );
      const { core } = adminClients();
      expect(
        (await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'acl.policyagent.dev/agents=true' })).items.map(
          (c) => c.metadata?.annotations?.['acl.policyagent.dev/replica'],
        ),
      ).toEqual(['replica-a']);
    });

    it('shares the key each agent verifies with: the leader lists a key reported to the follower, and writes KeyRotated', async () => {
      const t = await e2e.tenant('agentskey', (ns) => [...docsTenant(ns, 'team-documents'), apiKeySecret(ns, API_KEY)]);
      const { ns, api } = t;
      const a = await e2e.operator({ namespace: ns, identity: 'replica-a', agentStatusIntervalMs: 200, agentPublishIntervalMs: 100 });
      await waitFor('replica-a leads', () => a.elector.isLeader());
      const b = await e2e.operator({ namespace: ns, identity: 'replica-b', agentStatusIntervalMs: 200, agentPublishIntervalMs: 100 });
      const token = await t.token();
      const kid = 'acl-0123456789abcdef';
      for (const [id, label] of [
        ['keyed', kid],
        ['unlabelled', undefined],
      ] as const) {
        const r = statusReport(id, { docs: { revision: '1' } });
        const res = await fetch(`${b.apiUrl}/${ns}/connectors/policyagent/gateways/status`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
          body: JSON.stringify({ ...r, labels: { ...(r['labels'] as object), ...(label ? { 'acl-signing-key': label } : {}) } }),
        });
        expect(res.status).toBe(200);
      }
      const listed = await waitFor('the leader lists both agents with their keys', async () => {
        const res = await fetch(`${a.apiUrl}/${ns}/connectors/policyagent/gateways/bundles/docs/agents`, {
          headers: { Authorization: `Bearer ${API_KEY}` },
        });
        const body = (await res.json()) as { list: { id: string; signingKey: string | null }[] };
        return body.list.length === 2 ? body.list : undefined;
      });
      expect(Object.fromEntries(listed.map((l) => [l.id, l.signingKey]))).toEqual({ keyed: kid, unlabelled: null });
      const conditions = (await api.status('Bundle', 'docs'))['conditions'] as { type: string }[];
      expect(conditions.map((c) => c.type)).toContain('KeyRotated');
    });
  });
});
