import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ObjectKey } from '../controller/index.ts';
import { DEFAULT_FLEET } from '../config.ts';
import type { BundleReport } from './report.ts';
import { startFleet, STATUS_INTERVAL_MS } from './fleet.ts';
import { retirementDue } from './index.ts';
import { createMetrics } from '../metrics.ts';
import { createStore } from '../store/index.ts';

const T0 = Date.parse('2026-11-24T10:00:00Z');
const entry = (revision: string): BundleReport => ({
  name: 'docs',
  activeRevision: revision,
  lastActivation: undefined,
  lastDownload: undefined,
  error: undefined,
  httpCode: undefined,
  stopping: false,
});

describe('the fleet loop', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('asks for a Bundle status refresh at most once per interval, however many agents report', async () => {
    const enqueued: ObjectKey[] = [];
    const fleet = startFleet({
      config: DEFAULT_FLEET,
      store: createStore(),
      metrics: createMetrics({ defaultMetrics: false }),
      log: pino({ level: 'silent' }),
      now: () => Date.now(),
      enqueue: (k) => enqueued.push(k),
    });
    // 1,000 agents, each reporting every 10 s for a minute, moving from revision 1 to 2 on the way:
    // 6,000 reports, 2,000 of them changing what status shows.
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 1000; i++) {
        if (i % 10 !== second % 10) continue;
        fleet.agents.record({
          tenant: 'acme',
          agentId: `agent-${i}`,
          version: '1.1.0',
          signingKey: undefined,
          clientIp: '10.0.0.1',
          timeMs: Date.now(),
          bundles: [entry(second < 30 ? '1' : '2')],
        });
      }
      await vi.advanceTimersByTimeAsync(1000);
    }
    // The first change goes at once, then one per interval at most.
    expect(enqueued.length).toBeGreaterThanOrEqual(2);
    expect(enqueued.length).toBeLessThanOrEqual(Math.ceil(60_000 / STATUS_INTERVAL_MS) + 1);
    expect(new Set(enqueued.map((k) => `${k.kind}/${k.namespace}/${k.name}`))).toEqual(new Set(['Bundle/acme/docs']));
    // Reports that change nothing status shows ask for nothing.
    enqueued.length = 0;
    for (let i = 0; i < 1000; i++)
      fleet.agents.record({
        tenant: 'acme',
        agentId: `agent-${i}`,
        version: '1.1.0',
        signingKey: undefined,
        clientIp: '10.0.0.1',
        timeMs: Date.now(),
        bundles: [entry('2')],
      });
    await vi.advanceTimersByTimeAsync(STATUS_INTERVAL_MS * 2);
    expect(enqueued).toEqual([]);
    await fleet.stop();
  });

  it('gives status a view of the agents that moves only when a refresh fires', async () => {
    const fleet = startFleet({
      config: DEFAULT_FLEET,
      store: createStore(),
      metrics: createMetrics({ defaultMetrics: false }),
      log: pino({ level: 'silent' }),
      now: () => Date.now(),
      enqueue: () => undefined,
    });
    const seen = (id: string, revision: string): void =>
      fleet.agents.record({
        tenant: 'acme',
        agentId: id,
        version: '1.1.0',
        signingKey: undefined,
        clientIp: '10.0.0.1',
        timeMs: Date.now(),
        bundles: [entry(revision)],
      });
    seen('a', '1');
    await vi.advanceTimersByTimeAsync(1);
    expect(fleet.view.summary('acme', 'docs', 1, Date.now())).toMatchObject({ reporting: 1, current: 1 });
    // Within the interval, what a reconcile reads (say, for the echo of its own status write) stays put.
    seen('a', '2');
    seen('b', '2');
    await vi.advanceTimersByTimeAsync(STATUS_INTERVAL_MS - 100);
    expect(fleet.view.summary('acme', 'docs', 2, Date.now())).toMatchObject({ reporting: 1, current: 0, behind: 1 });
    await vi.advanceTimersByTimeAsync(200);
    expect(fleet.view.summary('acme', 'docs', 2, Date.now())).toMatchObject({ reporting: 2, current: 2 });
    await fleet.stop();
  });

  it('notices silence by the clock: an expired agent refreshes its bundle', async () => {
    const enqueued: ObjectKey[] = [];
    const fleet = startFleet({
      config: { ...DEFAULT_FLEET, agentExpirySeconds: 60 },
      store: createStore(),
      metrics: createMetrics({ defaultMetrics: false }),
      log: pino({ level: 'silent' }),
      now: () => Date.now(),
      enqueue: (k) => enqueued.push(k),
    });
    fleet.agents.record({
      tenant: 'acme',
      agentId: 'a',
      version: '1.1.0',
      signingKey: undefined,
      clientIp: '10.0.0.1',
      timeMs: Date.now(),
      bundles: [entry('1')],
    });
    await vi.advanceTimersByTimeAsync(1);
    expect(enqueued).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(59_000);
    expect(enqueued).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fleet.agents.size()).toBe(0);
    expect(enqueued).toHaveLength(2);
    await fleet.stop();
  });

  it('after a start, retires no key before a whole window of status reports, and shows the reconcile each agent key', async () => {
    const fleet = startFleet({
      config: { ...DEFAULT_FLEET, agentExpirySeconds: 60 },
      store: createStore(),
      metrics: createMetrics({ defaultMetrics: false }),
      log: pino({ level: 'silent' }),
      now: () => Date.now(),
      enqueue: () => {},
    });
    expect(fleet.listeningSinceMs).toBe(T0);
    const bundles = [{ tenant: 'acme', name: 'docs' }];
    const kid = 'acl-bbbbbbbbbbbbbbbb';
    const report = (): void =>
      fleet.agents.record({
        tenant: 'acme',
        agentId: 'a',
        version: '1.1.0',
        signingKey: kid,
        clientIp: '10.0.0.1',
        timeMs: Date.now(),
        bundles: [entry('1')],
      });
    // The registry starts empty: an agent still on the previous key may simply not have reported yet.
    expect(retirementDue(fleet.agents, bundles, kid, Date.now(), fleet.listeningSinceMs)).toMatchObject({ due: false, agents: 0 });
    report();
    await vi.advanceTimersByTimeAsync(1);
    expect(fleet.view.agents('acme', 'docs', Date.now()).map((a) => a.signingKey)).toEqual([kid]);
    expect(retirementDue(fleet.agents, bundles, kid, Date.now(), fleet.listeningSinceMs).due).toBe(false);
    await vi.advanceTimersByTimeAsync(59_999);
    report();
    expect(retirementDue(fleet.agents, bundles, kid, Date.now(), fleet.listeningSinceMs)).toMatchObject({ due: true, agents: 1 });
    await fleet.stop();
  });
});
