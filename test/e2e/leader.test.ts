// A leader whose Lease renewal hangs (a black-holed connection) steps down within its renew
// deadline, before another replica can take the Lease over: never two leaders.
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clientsFor, createLeaderElector, type LeaderElector } from '../../src/kube/index.ts';
import { createNamespace, E2E_KUBECONFIG, ensureCrds, loadConfig, startApiProxy, waitFor, type ApiProxy } from '../support/kube.ts';

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: leader election (real API server)', { timeout: 60_000 }, () => {
  let drop: (() => Promise<void>) | undefined;
  let proxy: ApiProxy | undefined;
  const electors: LeaderElector[] = [];
  beforeAll(ensureCrds);
  afterEach(async () => {
    await proxy?.close();
    await Promise.all(electors.splice(0).map((e) => e.stop().catch(() => undefined)));
    await drop?.();
  });

  it('a leader whose renewal hangs steps down within renewDeadline', async () => {
    const n = await createNamespace('rv-lease');
    drop = n.drop;
    proxy = await startApiProxy();
    const log = pino({ level: 'silent' });
    const common = { namespace: n.name, name: 'acl-operator', log, leaseSeconds: 3, renewMs: 500, renewDeadlineMs: 2000, retryMs: 200 };
    const a = createLeaderElector({ ...common, api: clientsFor(proxy.kubeConfig).coordination, identity: 'a', onChange: () => undefined });
    const b = createLeaderElector({ ...common, api: clientsFor(loadConfig()).coordination, identity: 'b', onChange: () => undefined });
    electors.push(a, b);
    await a.start();
    await b.start();
    expect(a.isLeader()).toBe(true);
    proxy.freeze();
    await waitFor('b takes over', () => b.isLeader(), 20_000);
    // b takes over after 3 s without renewal; a's renew deadline is 2 s: never two leaders.
    expect({ a: a.isLeader(), b: b.isLeader() }).toEqual({ a: false, b: true });
  });
});
