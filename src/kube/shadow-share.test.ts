import { createHash } from 'node:crypto';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { fakeLedger, proposedTally } from '../../test/support/shadow.ts';
import { createShadowView, type SharedTallies } from '../shadow/index.ts';
import { encodeTallies, handOver, orderedHandOver } from './shadow-share.ts';

const log = pino({ level: 'silent' });
const T = Date.parse('2026-11-28T10:00:00Z');

/** Text that does not compress (as real inputs mostly do not): 896 hex digits. */
const noise = (seed: string): string =>
  Array.from({ length: 14 }, (_, j) => createHash('sha256').update(`${seed}/${j}`).digest('hex')).join('');

function shared(n: number, examples = 0): SharedTallies {
  return {
    session: 'op-b-1',
    tallies: Array.from({ length: n }, (_, i) => ({
      tenant: `tenant-${i % 7}`,
      rule: `rule-${i}`,
      tally: {
        ...proposedTally(100 + i, i % 5, T + i),
        examples: Array.from({ length: examples }, (_, k) => ({
          time: new Date(T + k).toISOString(),
          input: `{"i":${i},"k":${k},"x":"${noise(`${i}/${k}`)}"}`,
        })),
      },
    })),
  };
}

describe("a replica's shadow tallies in its sharing ConfigMap", () => {
  it('reach the leader as they were counted', async () => {
    const sent = shared(3, 1);
    const { zipped } = await encodeTallies(sent);
    const view = createShadowView({ ledger: fakeLedger('op-a-1'), now: () => T });
    await handOver(view, log, 'op-b', zipped.toString('base64'));
    expect(view.takeChanged().rules).toEqual(['tenant-0/rule-0', 'tenant-1/rule-1', 'tenant-2/rule-2']);
    const start = view.statusOf('tenant-1', 'rule-1', 'Proposed', 1, undefined);
    // Counted from the next summing on: the peer counts 5 more.
    await handOver(
      view,
      log,
      'op-b',
      (
        await encodeTallies({ ...sent, tallies: [{ ...sent.tallies[1]!, tally: { ...sent.tallies[1]!.tally, evaluated: 106 } }] })
      ).zipped.toString('base64'),
    );
    view.takeChanged();
    expect(view.statusOf('tenant-1', 'rule-1', 'Proposed', 1, start)).toMatchObject({ evaluated: 5 });
  });

  it('stay within their share of the ConfigMap: examples go first, then the tallies heard of least recently', async () => {
    const many = shared(400, 3);
    const fits = await encodeTallies(many, 64 * 1024);
    expect(fits.zipped.length).toBeLessThanOrEqual(64 * 1024);
    expect(fits).toMatchObject({ total: 400, kept: 400, examples: false });
    const tiny = await encodeTallies(shared(5000), 8 * 1024);
    expect(tiny.zipped.length).toBeLessThanOrEqual(8 * 1024);
    expect(tiny.kept).toBeLessThan(5000);
  });

  it('stay within their share however many rules a replica counts, even with long names that do not compress', async () => {
    const many = shared(20_000);
    const long = {
      ...many,
      tallies: many.tallies.map((t, i) => ({ ...t, tenant: noise(`t${i}`).slice(0, 63), rule: noise(`r${i}`).slice(0, 253) })),
    };
    const fit = await encodeTallies(long, 4 * 1024);
    expect(fit.zipped.length).toBeLessThanOrEqual(4 * 1024);
    expect(fit.kept).toBeLessThan(20_000);
  });

  it('from a peer that do not read are ignored, and its earlier ones kept', async () => {
    const view = createShadowView({ ledger: fakeLedger('op-a-1'), now: () => T });
    await handOver(view, log, 'op-b', (await encodeTallies(shared(1))).zipped.toString('base64'));
    view.takeChanged();
    await handOver(view, log, 'op-b', Buffer.from('not gzip').toString('base64'));
    expect(view.takeChanged().rules).toEqual([]);
  });

  it('reach the hub in the order their ConfigMaps changed, a deletion last, after what it last held', async () => {
    const seen: (string | undefined)[] = [];
    const hub = {
      setPeer: (_replica: string, shared: SharedTallies | undefined) => seen.push(shared && `${shared.session}:${shared.tallies.length}`),
    };
    const give = orderedHandOver(hub, log);
    // A large update (a slow read) then the replica's last write and its ConfigMap's deletion.
    const large = (await encodeTallies(shared(3000, 1), 1024 * 1024)).zipped.toString('base64');
    const last = (await encodeTallies(shared(2))).zipped.toString('base64');
    give('op-b', large, false);
    give('op-b', last, true);
    give('op-c', undefined, true);
    await vi.waitFor(() => expect(seen).toHaveLength(4));
    expect(seen).toEqual([undefined, 'op-b-1:3000', 'op-b-1:2', undefined]);
  });

  it('from a peer with times no date can hold are ignored: the leader still writes the status of that rule', async () => {
    const view = createShadowView({ ledger: fakeLedger('op-a-1'), now: () => T });
    const good = shared(1);
    await handOver(view, log, 'op-b', (await encodeTallies(good)).zipped.toString('base64'));
    const tally = good.tallies[0]!;
    const start = view.statusOf(tally.tenant, tally.rule, 'Proposed', 1, undefined);
    const hostile = [{ lastMs: 1e300 }, { lastFlipMs: 8.64e15 + 1, flips: 50 }, { lastMs: -1e300 }, { lastMs: 0.5 }];
    for (const times of hostile) {
      const zipped = await encodeTallies({
        ...good,
        tallies: [{ ...tally, tally: { ...tally.tally, evaluated: 200, matched: 60, ...times } }],
      });
      await handOver(view, log, 'op-b', zipped.zipped.toString('base64'));
      view.takeChanged();
      expect(view.statusOf(tally.tenant, tally.rule, 'Proposed', 1, start)).toMatchObject({ evaluated: 0 });
    }
  });
});
