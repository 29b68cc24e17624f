// replay --opa's own part with a real OPA (OPA_BIN; CI runs OPA 1.1 and 0.61): the candidate's
// bundles decide every replayed decision as the native replay does (0 disagreements), the directory
// and a bundle's entityTypes filter included, across several batches. Without OPA_BIN it is skipped;
// test/replay/opa.test.ts covers batching and failures with a fake OPA.
import { describe, expect, it } from 'vitest';
import { openOpa } from '../../src/opa/index.ts';
import type { JsonMap } from '../../src/policy/index.ts';
import { createOpaReplay } from '../../src/replay/opa.ts';
import { createReplayer } from '../../src/replay/replay.ts';
import type { Recorded, Replayed } from '../../src/replay/types.ts';
import { candidateWorld, recorded } from '../replay/world.ts';

const OPA_BIN = process.env['OPA_BIN'];

/** Service and OPA lines over documents, reports and the directory; decided allow or deny at random-looking but fixed places. */
function lines(n: number): Recorded[] {
  const out: Recorded[] = [];
  for (let i = 0; i < n; i++) {
    const team = ['red', 'blue', 'finance'][i % 3] ?? 'red';
    const principal =
      i % 7 === 0 ? { type: 'user', id: 'dana' } : { type: 'user', id: `u-${i}`, team, ...(i % 11 === 0 ? { roles: ['admin'] } : {}) };
    const resource: JsonMap =
      i % 4 === 0 ? { type: 'report', id: `r-${i}` } : { type: 'document', id: `d-${i}`, team: ['red', 'blue'][i % 2] ?? 'red' };
    const action = ['read', 'write', 'delete'][i % 3] ?? 'read';
    const source = i % 5 === 0 ? 'opa' : 'service';
    const bundle = source === 'opa' ? (resource['type'] === 'report' || i % 2 === 0 ? 'all' : 'documents') : undefined;
    out.push(
      recorded({
        where: `l:${i + 1}`,
        source,
        ...(bundle ? { bundle } : {}),
        decision: i % 2 === 0 ? 'allow' : 'deny',
        principal,
        action,
        resource,
      }),
    );
  }
  return out;
}

if (OPA_BIN)
  describe(`replay --opa with a real OPA (OPA_BIN=${OPA_BIN})`, () => {
    it('agrees with the native replay on every bundle that admits each decision, over several batches', async () => {
      const opa = await openOpa(OPA_BIN);
      if (typeof opa === 'string') throw new Error(opa);
      const world = await candidateWorld();
      const replay = createReplayer(world);
      const o = createOpaReplay(opa, world);
      let expected = 0;
      const native = { unchanged: 0, allowToDeny: 0, denyToAllow: 0 };
      for (const rec of lines(2_400)) {
        const r = replay(rec) as Replayed;
        // A service line goes to both bundles when it is about a document, to `all` alone for a report.
        const times = rec.source === 'opa' ? 1 : rec.input.resource['type'] === 'document' ? 2 : 1;
        expected += times;
        const key = r.change === 'unchanged' ? 'unchanged' : r.change === 'allow-to-deny' ? 'allowToDeny' : 'denyToAllow';
        native[key] += times;
        await o.add(r);
      }
      const result = await o.finish();
      if (typeof result === 'string') throw new Error(result);
      expect(result.version).toBe(opa.version);
      expect(result.disagreementExamples).toEqual([]);
      expect(result.disagreements).toBe(0);
      expect(result.decided).toBe(expected);
      expect(result.counts).toEqual({ replayed: expected, ...native });
      expect(native.denyToAllow).toBeGreaterThan(0);
      expect(native.allowToDeny).toBeGreaterThan(0);
    });
  });
else describe.skip('replay --opa with a real OPA (set OPA_BIN)', () => {});
