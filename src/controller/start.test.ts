// What a start costs per Rule: each is translated to Rego once, for its status and its bundles alike.
import { describe, expect, it, vi } from 'vitest';
import { fakeSource, sourceObject as object, startController, type FakeSource } from '../../test/support/controller.ts';
import { rng } from '../../test/support/corpus.ts';
import { compileWhole } from '../policy/cel.ts';
import * as regorule from '../policy/regorule.ts';
import type { Store } from '../store/index.ts';
import type { SourceObject } from './types.ts';

vi.mock('../policy/regorule.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../policy/regorule.ts')>();
  return { ...original, translateRule: vi.fn(original.translateRule) };
});
const translateRule = vi.mocked(regorule.translateRule);

describe('a start', () => {
  it('translates each Rule once for its status Rego and the bundle that holds it', async () => {
    const rules = Array.from({ length: 40 }, (_, i) =>
      object('Rule', `rule-${i}`, {
        state: 'Enforced',
        subjectType: 'user',
        actions: ['read'],
        resourceType: 'document',
        condition: `principal.id != "user-${i}"`,
      }),
    );
    const source = fakeSource([object('Connector', 'gateways', {}), object('Bundle', 'docs', { connector: 'gateways' }), ...rules]);
    translateRule.mockClear();
    const run = startController(source);
    await run.drain();
    expect(translateRule).toHaveBeenCalledTimes(40);
    const held = run.store.snapshot().tenants.get('acme')?.bundles.get('docs')?.source.rules.length;
    expect(held).toBe(40);
    const status = source.status('Rule', 'rule-7') as { translation: { rego: string } };
    expect(status.translation.rego).toContain('# Rule rule-7');
  });

  it('gives the store, bundle bytes and statuses of the old start (as a follower, then every key again as leader) on generated tenants', async () => {
    for (const seed of [1, 2, 3]) {
      const objects = generatedTenants(seed);
      const before = fakeSource(objects);
      const old = await oldStart(before, seed);
      const after = fakeSource(objects);
      const held = startController(after, { held: true, leading: false, now: () => NOW });
      for (const batch of batches(after, seed)) {
        for (const k of batch) held.controller.enqueue(k);
        await new Promise((r) => setImmediate(r));
      }
      held.leading = true;
      for (const k of after.keys()) held.controller.enqueue(k);
      held.controller.release();
      await held.controller.idle();
      expect(served(held.store)).toEqual(served(old));
      expect(statuses(after)).toEqual(statuses(before));
      // Every deployed condition is what the whole CEL compile gives for its text.
      for (const t of held.store.snapshot().tenants.values())
        for (const b of t.bundles.values())
          for (const r of b.source.rules) {
            const whole = r.conditionText === undefined ? undefined : compileWhole(r.conditionText);
            expect(JSON.stringify(r.condition)).toBe(JSON.stringify(whole?.ok ? whole.cond : undefined));
          }
    }
  });
});

const NOW = new Date('2026-11-28T05:00:00Z');
const PIECES = [
  'principal.team == resource.team',
  '"admin" in principal.roles',
  'resource.path.startsWith("/shared/")',
  'principal.level >= 3',
];

/** Tenants of rules whose conditions differ in their strings (some invalid, some not deployed), a Connector and two Bundles each. */
function generatedTenants(seed: number): SourceObject[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const out: SourceObject[] = [];
  for (let t = 0; t < 4; t++) {
    const namespace = `tenant-${t}`;
    out.push(object('Connector', 'opa', {}, { namespace }));
    out.push(object('Bundle', 'all', { connector: 'opa' }, { namespace }));
    out.push(object('Bundle', 'docs', { connector: 'opa', entityTypes: ['document'] }, { namespace }));
    for (let i = 0; i < 30; i++) {
      const own = pick([
        `principal.id != "u-${t}-${i}"`,
        `resource["k-${i}"] == 'v${i}'`,
        `principal.id == "x\\${i}"`,
        'principal.id ==',
        `cidr("10.${i}.0.0/16").containsIP(context.ip)`,
      ]);
      out.push(
        object(
          'Rule',
          `rule-${String(i).padStart(2, '0')}`,
          {
            state: pick(['Enforced', 'Enforced', 'Enforced', 'Approved', 'Draft']),
            subjectType: 'user',
            actions: [pick(['read', 'write'])],
            resourceType: pick(['document', 'folder']),
            condition: `${pick(PIECES)} && ${own}`,
          },
          { namespace },
        ),
      );
    }
  }
  return out;
}

/** The keys in the batches informers might deliver them in (seeded). */
function batches(source: FakeSource, seed: number): ReturnType<FakeSource['keys']>[] {
  const r = rng(seed + 100);
  const keys = source.keys();
  const out: ReturnType<FakeSource['keys']>[] = [];
  for (let i = 0; i < keys.length; ) {
    const n = 1 + Math.floor(r() * 40);
    out.push(keys.slice(i, i + n));
    i += n;
  }
  return out;
}

/** The start as it was: drains as a follower while the lists arrive, then the new leader queues every key again. */
async function oldStart(source: FakeSource, seed: number): Promise<Store> {
  const run = startController(source, { leading: false, now: () => NOW });
  for (const batch of batches(source, seed)) await run.drain(batch);
  run.leading = true;
  await run.drain();
  return run.store;
}

function served(store: Store): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [tenant, t] of store.snapshot().tenants)
    for (const [name, b] of t.bundles)
      out[`${tenant}/${name}`] = { etag: b.built.etag, revision: b.built.revision, bytes: Buffer.from(b.built.bytes).toString('base64') };
  return out;
}

function statuses(source: FakeSource): Record<string, unknown> {
  return Object.fromEntries([...source.objects].map(([k, o]) => [k, o.raw['status']]));
}
