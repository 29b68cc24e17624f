// A leader whose Lease renewal hangs (a black-holed connection) steps down within its renew
// deadline, before another replica can take the Lease over: never two leaders.
import pino from 'pino';
import { expect, it } from 'vitest';
import { clientsFor, createLeaderElector } from '../../src/kube/index.ts';
import { loadConfig, startApiProxy, waitFor } from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

describeE2E('Kubernetes: leader election (real API server)', { timeout: 60_000 }, (e2e) => {
  it('a leader whose renewal hangs steps down within renewDeadline', async () => {
    const { ns } = await e2e.tenant('rv-lease');
    const proxy = await startApiProxy();
    const log = pino({ level: 'silent' });
    const common = { namespace: ns, name: 'acl-operator', log, leaseSeconds: 3, renewMs: 500, renewDeadlineMs: 2000, retryMs: 200 };
    const a = createLeaderElector({ ...common, api: clientsFor(proxy.kubeConfig).coordination, identity: 'a', onChange: () => undefined });
    const b = createLeaderElector({ ...common, api: clientsFor(loadConfig()).coordination, identity: 'b', onChange: () => undefined });
    // Undone last first: the proxy closes before the electors stop, so a's stop does not hang on a frozen proxy.
    e2e.later(() => Promise.all([a, b].map((e) => e.stop().catch(() => undefined))));
    e2e.later(() => proxy.close());
    await a.start();
    await b.start();
    expect(a.isLeader()).toBe(true);
    proxy.freeze();
    await waitFor('b takes over', () => b.isLeader(), 20_000);
    // b takes over after 3 s without renewal; a's renew deadline is 2 s: never two leaders.
    expect({ a: a.isLeader(), b: b.isLeader() }).toEqual({ a: false, b: true });
  });
});
