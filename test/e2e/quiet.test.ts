// No status is rewritten when nothing changed, in every state (not only the happy path).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Operator } from '../../src/modes/index.ts';
import {
  apply,
  bundleYaml,
  connectorYaml,
  createNamespace,
  customApi,
  E2E_KUBECONFIG,
  ensureCrds,
  fetchBundle,
  loadConfig,
  metricValue,
  readToken,
  ruleYaml,
  startE2EOperator,
  TEAM_RULE,
  waitFor,
} from '../support/kube.ts';

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: quiet status in every state (real API server)', { timeout: 90_000 }, () => {
  let op: Operator | undefined;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(ensureCrds);
  afterEach(async () => {
    await op?.stop();
    op = undefined;
    await drop?.();
  });

  it('writes nothing on resync once settled', async () => {
    const n = await createNamespace('rv-quiet');
    drop = n.drop;
    const ns = n.name;
    const api = customApi(ns);
    await apply(loadConfig(), [
      connectorYaml(ns, 'gateways'),
      connectorYaml(ns, 'off', { active: false }),
      connectorYaml(ns, 'gone', { revoked: true }),
      connectorYaml(ns, 'lonely'),
      bundleYaml(ns, 'docs', { connector: 'gateways' }),
      bundleYaml(ns, 'v1', { connector: 'gateways', regoVersion: 1, entityTypes: ['document'] }),
      bundleYaml(ns, 'orphan', { connector: 'nobody' }),
      bundleYaml(ns, 'offb', { connector: 'off' }),
      ruleYaml(ns, 'team', TEAM_RULE),
      ruleYaml(ns, 'stale', TEAM_RULE),
      ruleYaml(ns, 'syntax', { ...TEAM_RULE, condition: 'principal.team ==' }),
      ruleYaml(ns, 'unsupported', { ...TEAM_RULE, condition: 'principal.team.matches("x")' }),
      ruleYaml(ns, 'draft', { ...TEAM_RULE, state: 'Draft' }),
      ruleYaml(ns, 'approved', { ...TEAM_RULE, state: 'Approved' }),
    ]);
    op = await startE2EOperator({ namespace: ns, activityFlushMs: 3_600_000 });
    const o = op;
    await waitFor('stale rule Current', async () => (await api.status('Rule', 'stale'))['phase'] === 'Enforced');
    await api.patchSpec('Rule', 'stale', { condition: 'resource.x ==' });
    await waitFor(
      'stale rule Stale',
      async () => ((await api.status('Rule', 'stale'))['translation'] as { status?: string } | undefined)?.status === 'Stale',
    );
    const token = await waitFor('token', () => readToken(ns, 'gateways'));
    expect((await fetchBundle(o, ns, 'gateways', 'docs', token)).status).toBe(200);
    await o.flushActivity();
    await o.controller.idle();
    const kinds = ['Rule', 'Connector', 'Bundle'] as const;
    const snapshot = async (): Promise<Record<string, unknown>> => {
      const out: Record<string, unknown> = {};
      for (const k of kinds)
        for (const key of o.source.keys().filter((x) => x.kind === k))
          out[`${k}/${key.name}`] = { rv: (await api.get(k, key.name)).metadata.resourceVersion };
      return out;
    };
    const before = await snapshot();
    const writes = await metricValue(o, 'acl_status_writes_total');
    for (let i = 0; i < 3; i++) {
      for (const key of o.source.keys()) o.controller.enqueue(key);
      await o.controller.idle();
    }
    await o.flushActivity();
    expect(await metricValue(o, 'acl_status_writes_total')).toBe(writes);
    expect(await snapshot()).toEqual(before);
    console.log(JSON.stringify(await api.status('Rule', 'unsupported')).slice(0, 300));
  });
});
