import { bundleEntry } from '../../test/support/fleet.ts';
import { describe, expect, it } from 'vitest';
import type { Sighting } from './agents.ts';
import { createAgentRegistry } from './registry.ts';
import type { BundleReport } from './report.ts';

const T0 = Date.parse('2026-11-24T10:00:00Z');
const entry = bundleEntry;
const seen = (agentId: string, timeMs: number, bundles: BundleReport[], over: Partial<Sighting> = {}): Sighting => ({
  tenant: 'acme',
  agentId,
  version: '1.1.0',
  signingKey: undefined,
  clientIp: '10.0.0.1',
  timeMs,
  bundles,
  ...over,
});

function registry(over: { windowMs?: number; maxAgents?: number } = {}) {
  const changes: string[] = [];
  const propagated: number[] = [];
  let evicted = 0;
  const r = createAgentRegistry({
    windowMs: over.windowMs ?? 300_000,
    maxAgents: over.maxAgents ?? 100,
    onPropagated: (s) => propagated.push(s),
    onEvicted: () => {
      evicted++;
    },
  });
  r.onChange((t, b) => changes.push(`${t}/${b}`));
  return { r, changes, propagated, evicted: () => evicted };
}

describe('the agent registry', () => {
  it('counts agents as current, behind or failing against the revision served, failing named first', () => {
    const { r } = registry();
    r.record(seen('a', T0, [entry('docs', { activeRevision: '4' })]));
    r.record(seen('b', T0, [entry('docs', { activeRevision: '3' })]));
    r.record(
      seen('c', T0, [
        entry('docs', { activeRevision: '4', error: { code: 'bundle_error', message: 'server replied with Unauthorized' }, httpCode: 401 }),
      ]),
    );
    const s = r.summary('acme', 'docs', 4, T0);
    expect(s).toMatchObject({ reporting: 3, current: 1, behind: 1, failing: 1 });
    expect(s.problems.map((p) => [p.id, p.state])).toEqual([
      ['c', 'failing'],
      ['b', 'behind'],
    ]);
    // Against the older revision, the same agents read differently.
    expect(r.summary('acme', 'docs', 3, T0)).toMatchObject({ current: 1, behind: 1, failing: 1 });
    expect(r.summary('acme', 'other', 4, T0)).toMatchObject({ reporting: 0 });
  });

  it('counts an agent that never activated anything as behind, and one without a served revision too', () => {
    const { r } = registry();
    r.record(seen('a', T0, [entry('docs', { activeRevision: undefined })]));
    expect(r.summary('acme', 'docs', 1, T0)).toMatchObject({ behind: 1 });
    r.record(seen('b', T0, [entry('docs')]));
    expect(r.summary('acme', 'docs', undefined, T0)).toMatchObject({ reporting: 2, behind: 2 });
  });

  it('forgets an agent silent for longer than the window, and says which bundle changed', () => {
    const { r, changes } = registry({ windowMs: 60_000 });
    r.record(seen('a', T0, [entry('docs')]));
    r.record(seen('b', T0 + 30_000, [entry('docs')]));
    changes.length = 0;
    expect(r.summary('acme', 'docs', 3, T0 + 60_000).reporting).toBe(2);
    // Past the window a summary no longer counts it, even before expire() runs.
    expect(r.summary('acme', 'docs', 3, T0 + 60_001).reporting).toBe(1);
    r.expire(T0 + 60_001);
    expect(r.size()).toBe(1);
    expect(changes).toEqual(['acme/docs']);
    r.expire(T0 + 60_002);
    expect(changes).toEqual(['acme/docs']);
  });

  it('announces a change only when status could show it: not for a report that only moves the time', () => {
    const { r, changes } = registry();
    r.record(seen('a', T0, [entry('docs')]));
    expect(changes).toEqual(['acme/docs']);
    for (let i = 1; i <= 10; i++) r.record(seen('a', T0 + i * 10_000, [entry('docs', { lastDownload: `t${i}` })]));
    expect(changes).toEqual(['acme/docs']);
    r.record(seen('a', T0 + 200_000, [entry('docs', { activeRevision: '4' })]));
    r.record(
      seen('a', T0 + 210_000, [entry('docs', { activeRevision: '4', error: { code: 'bundle_error', message: 'x' }, httpCode: 500 })]),
    );
    r.record(seen('a', T0 + 220_000, [entry('docs', { activeRevision: '4' })]));
    expect(changes).toHaveLength(4);
  });

  it('holds at most maxAgents, dropping the least recently heard', () => {
    const { r, evicted } = registry({ maxAgents: 3 });
    for (const [i, id] of ['a', 'b', 'c'].entries()) r.record(seen(id, T0 + i, [entry('docs')]));
    r.record(seen('a', T0 + 10, [entry('docs')]));
    r.record(seen('d', T0 + 11, [entry('docs')]));
    expect(r.size()).toBe(3);
    expect(
      r
        .agents('acme', 'docs', T0 + 11)
        .map((a) => a.id)
        .sort(),
    ).toEqual(['a', 'c', 'd']);
    expect(evicted()).toBe(1);
  });

  it('when full, takes from the tenant holding the most: a flood of agent ids from one tenant evicts its own agents', () => {
    const { r } = registry({ maxAgents: 10 });
    for (const id of ['a', 'b', 'c']) r.record(seen(id, T0, [entry('docs')], { tenant: 'globex' }));
    for (let i = 0; i < 100; i++) r.record(seen(`flood-${i}`, T0 + 1 + i, [entry('docs')]));
    expect(r.size()).toBe(10);
    // globex's agents were heard first, yet are kept: acme holds the most, so acme's oldest go.
    expect(
      r
        .agents('globex', 'docs', T0 + 200)
        .map((a) => a.id)
        .sort(),
    ).toEqual(['a', 'b', 'c']);
    expect(r.agents('acme', 'docs', T0 + 200).map((a) => a.id)).toHaveLength(7);
    expect(r.agents('acme', 'docs', T0 + 200).map((a) => a.id)).toContain('flood-99');
  });

  it('drops an agent whose last report says it is stopping, instead of counting it as failing', () => {
    const { r, changes } = registry();
    r.record(seen('a', T0, [entry('docs')]));
    changes.length = 0;
    r.record(
      seen('a', T0 + 1, [
        entry('docs', { error: { code: 'bundle_error', message: 'request failed: Get "…": context canceled' }, stopping: true }),
      ]),
    );
    expect(r.summary('acme', 'docs', 3, T0 + 1).reporting).toBe(0);
    expect(changes).toEqual(['acme/docs']);
  });

  it("records the report of an Inactive connector's own token as failing 403, keeping the revision the agent still runs", () => {
    const { r } = registry();
    r.record(seen('a', T0, [entry('docs')], { refused: { status: 403, message: 'connector gateways is Inactive' } }));
    const [agent] = r.agents('acme', 'docs', T0);
    expect(agent).toMatchObject({ activeRevision: '3', httpCode: 403, error: { code: 'connector_inactive' } });
    // What OPA itself says about its download wins over the refusal's generic message.
    r.record(
      seen('a', T0 + 1, [entry('docs', { error: { code: 'bundle_error', message: 'server replied with Forbidden' }, httpCode: 403 })], {
        refused: { status: 403, message: 'x' },
      }),
    );
    expect(r.agents('acme', 'docs', T0 + 1)[0]?.error).toEqual({ code: 'bundle_error', message: 'server replied with Forbidden' });
  });

  it('marks an OPA that reports two of our bundles as failing on both: only one of them can activate', () => {
    const { r } = registry();
    r.record(
      seen('a', T0, [
        entry('docs'),
        entry('all', { activeRevision: undefined, error: { code: 'bundle_error', message: 'detected overlapping roots' } }),
      ]),
    );
    expect(r.agents('acme', 'docs', T0)[0]?.alsoLoads).toEqual(['all']);
    expect(r.summary('acme', 'docs', 3, T0)).toMatchObject({ failing: 1, current: 0 });
    expect(r.summary('acme', 'all', 1, T0)).toMatchObject({ failing: 1 });
  });

  it('times a published revision until a known agent reports it active; a starting agent is no propagation', () => {
    const { r, propagated } = registry();
    r.record(seen('a', T0, [entry('docs', { activeRevision: '3' })]));
    r.published('acme', 'docs', 4, T0 + 1_000);
    r.record(seen('b', T0 + 1_200, [entry('docs', { activeRevision: '4' })]));
    r.record(seen('a', T0 + 1_750, [entry('docs', { activeRevision: '4' })]));
    expect(propagated).toEqual([0.75]);
    // The same revision published again (a restart of the service) keeps its first time.
    r.published('acme', 'docs', 4, T0 + 5_000);
    r.record(seen('a', T0 + 6_000, [entry('docs', { activeRevision: '3' })]));
    r.record(seen('a', T0 + 6_500, [entry('docs', { activeRevision: '4' })]));
    expect(propagated).toEqual([0.75, 5.5]);
  });

  it('forgets the agents of a bundle that is gone', () => {
    const { r } = registry();
    r.record(seen('a', T0, [entry('docs')]));
    r.record(seen('a', T0, [entry('docs')], { tenant: 'globex' }));
    r.forget('acme', 'docs');
    expect(r.size()).toBe(1);
    expect(r.agents('globex', 'docs', T0)).toHaveLength(1);
  });

  describe('with peers (other replicas)', () => {
    const agent = (id: string, lastReportMs: number, activeRevision: string) => ({
      id,
      version: '1.1.0',
      signingKey: undefined,
      clientIp: '10.0.0.2',
      lastReportMs,
      activeRevision,
      lastActivation: undefined,
      lastDownload: undefined,
      error: undefined,
      httpCode: undefined,
      alsoLoads: [],
    });

    it('counts every agent once, as the replica that heard from it last describes it', () => {
      const { r } = registry();
      r.record(seen('a', T0 + 100, [entry('docs', { activeRevision: '4' })]));
      r.record(seen('b', T0 + 100, [entry('docs', { activeRevision: '3' })]));
      r.setPeer('replica-2', { 'acme/docs': [agent('b', T0 + 200, '4'), agent('c', T0 + 50, '4'), agent('a', T0 + 10, '3')] }, T0 + 300);
      expect(r.summary('acme', 'docs', 4, T0 + 300)).toMatchObject({ reporting: 3, current: 3 });
      expect(r.agents('acme', 'docs', T0 + 300).map((a) => [a.id, a.activeRevision, a.clientIp])).toEqual([
        ['a', '4', '10.0.0.1'],
        ['b', '4', '10.0.0.2'],
        ['c', '4', '10.0.0.2'],
      ]);
      // Only this replica's own agents are what it shares.
      expect(Object.keys(r.exportLocal(T0 + 300))).toEqual(['acme/docs']);
      expect(r.exportLocal(T0 + 300)['acme/docs']?.map((a) => a.id)).toEqual(['a', 'b']);
    });

    it('announces a bundle only when what a peer says changes what status shows, and forgets a peer that is gone', () => {
      const { r, changes } = registry();
      r.setPeer('replica-2', { 'acme/docs': [agent('c', T0, '4')] }, T0);
      expect(changes).toEqual(['acme/docs']);
      r.setPeer('replica-2', { 'acme/docs': [agent('c', T0 + 10_000, '4')] }, T0 + 10_000);
      expect(changes).toEqual(['acme/docs']);
      r.setPeer('replica-2', undefined, T0 + 20_000);
      expect(changes).toEqual(['acme/docs', 'acme/docs']);
      expect(r.summary('acme', 'docs', 4, T0 + 20_000).reporting).toBe(0);
    });

    it("does not count a peer's agent past the window (a replica that died stops refreshing them)", () => {
      const { r } = registry({ windowMs: 60_000 });
      r.setPeer('replica-2', { 'acme/docs': [agent('c', T0, '4')] }, T0);
      expect(r.summary('acme', 'docs', 4, T0 + 60_000).reporting).toBe(1);
      expect(r.summary('acme', 'docs', 4, T0 + 60_001).reporting).toBe(0);
    });

    it("announces a bundle when a peer's agent ages out on this replica's clock, once", () => {
      const { r, changes } = registry({ windowMs: 60_000 });
      r.setPeer('replica-2', { 'acme/docs': [agent('c', T0, '4')] }, T0);
      changes.length = 0;
      r.expire(T0 + 30_000);
      expect(changes).toEqual([]);
      r.expire(T0 + 61_000);
      expect(changes).toEqual(['acme/docs']);
      r.expire(T0 + 62_000);
      expect(changes).toEqual(['acme/docs']);
    });
  });
});
