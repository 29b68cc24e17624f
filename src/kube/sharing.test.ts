import { gunzipSync, gzipSync } from 'node:zlib';
import { agentFixture } from '../../test/support/fleet.ts';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../fleet/index.ts';
import { encodeAgents, peerAgents } from './sharing.ts';

const agent = (i: number): Agent =>
  agentFixture(`opa-${i.toString(36)}-${((i * 2654435761) % 4294967296).toString(16)}`, {
    clientIp: `10.${i % 250}.${(i >> 8) % 250}.7`,
    lastReportMs: 1_000_000 + i,
    activeRevision: String(i % 7),
  });

describe("a replica's agents in its ConfigMap", () => {
  it('carries every agent when they fit', async () => {
    const local = { 'acme/docs': [agent(1), agent(2)] };
    const { zipped, total, kept } = await encodeAgents(local, 'r1', 5, 900 * 1024);
    expect([total, kept]).toEqual([2, 2]);
    expect(JSON.parse(gunzipSync(zipped).toString('utf8'))).toEqual({
      v: 1,
      replica: 'r1',
      updatedMs: 5,
      bundles: JSON.parse(JSON.stringify(local)) as unknown,
    });
  });

  it('when they do not fit, keeps the largest half, quarter, ... of all of them that fits, the most recently heard', async () => {
    const all = Array.from({ length: 20_000 }, (_, i) => agent(i));
    const local = { 'acme/docs': all.filter((_, i) => i % 2 === 0), 'acme/other': all.filter((_, i) => i % 2 === 1) };
    const maxBytes = 100 * 1024;
    const { zipped, total, kept } = await encodeAgents(local, 'r1', 5, maxBytes);
    expect(total).toBe(20_000);
    expect(zipped.length).toBeLessThanOrEqual(maxBytes);
    // The first of 1/2, 1/4, 1/8, ... of all 20,000 that fits: not a fraction of a fraction.
    let expected = 0;
    for (let n = 1; n < 12; n++) {
      const size = (await encodeAgents({ x: all.slice(-Math.floor(20_000 / 2 ** n)) }, 'r1', 5, Infinity)).zipped.length;
      if (size <= maxBytes) {
        expected = Math.floor(20_000 / 2 ** n);
        break;
      }
    }
    expect(kept).toBe(expected);
    // Here a quarter fits (a half does not): halving twice, never a fraction of a fraction (1/8).
    expect(kept).toBe(5_000);
    const shared = JSON.parse(gunzipSync(zipped).toString('utf8')) as { bundles: Record<string, Agent[]> };
    const ids = Object.values(shared.bundles)
      .flat()
      .map((a) => a.lastReportMs);
    expect(ids).toHaveLength(kept);
    expect(Math.min(...ids)).toBe(1_000_000 + 20_000 - kept);
  });

  it('carries the key each agent verifies with to its peers', async () => {
    const local = { 'acme/docs': [{ ...agent(1), signingKey: 'acl-0123456789abcdef' }, agent(2)] };
    const { zipped } = await encodeAgents(local, 'r1', 5, 900 * 1024);
    const read = await peerAgents(zipped.toString('base64'));
    expect(read['acme/docs']?.map((a) => [a.id, a.signingKey])).toEqual([
      [agent(1).id, 'acl-0123456789abcdef'],
      [agent(2).id, undefined],
    ]);
  });

  it("reads a peer's unprintable key label as no label, as a status report's is (the CLI prints it to a terminal)", async () => {
    const odd = { v: 1, replica: 'r0', updatedMs: 5, bundles: { 'acme/docs': [{ ...agent(4), signingKey: '\u001b]0;owned\u0007acl-x' }] } };
    const read = await peerAgents(gzipSync(JSON.stringify(odd)).toString('base64'));
    expect(read['acme/docs']?.[0]).toMatchObject({ id: agent(4).id, signingKey: undefined });
  });

  it('reads the ConfigMap of a replica older than signed bundles (no signingKey field) as agents without the label', async () => {
    const old = { v: 1, replica: 'r0', updatedMs: 5, bundles: { 'acme/docs': [{ ...agent(3), signingKey: undefined }] } };
    const read = await peerAgents(gzipSync(JSON.stringify(old)).toString('base64'));
    expect(read['acme/docs']?.[0]).toMatchObject({ id: agent(3).id, activeRevision: '3', signingKey: undefined });
  });
});
