// A new leader with nothing to change writes nothing (no status, no token).
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

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: a quiet handover (real API server)', { timeout: 90_000 }, () => {
  const ops: Operator[] = [];
  let drop: (() => Promise<void>) | undefined;
  beforeAll(ensureCrds);
  afterEach(async () => {
    for (const o of ops.splice(0)) await o.stop();
    await drop?.();
  });

  it('the follower takes over without rewriting anything', async () => {
    const n = await createNamespace('rv-handover');
    drop = n.drop;
    const ns = n.name;
    const api = customApi(ns);
    await apply(loadConfig(), [
      connectorYaml(ns, 'gateways'),
      bundleYaml(ns, 'docs', { connector: 'gateways' }),
      ruleYaml(ns, 'team', TEAM_RULE),
      ruleYaml(ns, 'syntax', { ...TEAM_RULE, condition: 'principal.team ==' }),
    ]);
    const a = await startE2EOperator({ namespace: ns, identity: 'a' });
    ops.push(a);
    await waitFor('revision 1', async () => (await api.status('Bundle', 'docs'))['revision'] === 1);
    const b = await startE2EOperator({ namespace: ns, identity: 'b' });
    ops.push(b);
    const token = await waitFor('token', () => readToken(ns, 'gateways'));
    // b is polled first, a last: a's stop records the newest lastSync, so b has nothing newer to write.
    expect((await fetchBundle(b, ns, 'gateways', 'docs', token)).status).toBe(200);
    const polledB = Date.now();
    await waitFor('the clock moved on', () => Date.now() > polledB);
    expect((await fetchBundle(a, ns, 'gateways', 'docs', token)).status).toBe(200);
    await a.stop();
    ops.splice(0, 1);
    const rvs = async (): Promise<string[]> =>
      Promise.all(
        (['Rule/team', 'Rule/syntax', 'Connector/gateways', 'Bundle/docs'] as const).map(async (k) => {
          const [kind, name] = k.split('/') as ['Rule' | 'Connector' | 'Bundle', string];
          return `${k}@${(await api.get(kind, name)).metadata.resourceVersion}`;
        }),
      );
    const before = await rvs();
    // Becoming leader enqueues every object at once; idle() then waits for that whole pass.
    await waitFor('b leads', () => b.elector.isLeader());
    await b.controller.idle();
    await b.flushActivity();
    expect(await rvs()).toEqual(before);
    expect(await metricValue(b, 'acl_status_writes_total')).toBe(0);
    expect(await readToken(ns, 'gateways')).toBe(token);
  });
});
