// One copy of a Rule's data: the reconcile keeps the source's own spec (when the schema changes
// nothing in it) and the bundles' own Rego, and never changes either, so sharing them is safe.
import { describe, expect, it } from 'vitest';
import { fakeSource, NS, sourceObject, startController } from '../../test/support/controller.ts';
import { ruleTranslation } from '../policy/index.ts';
import type { ObjectKey } from './types.ts';

/** Freezes a JSON value and everything in it: a change anywhere then throws (modules are strict). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

describe('a Rule held once', () => {
  it('records the source spec itself in status, unchanged, through many edits in a row', async () => {
    const specs = Array.from({ length: 20 }, (_, i) =>
      deepFreeze({
        state: 'Enforced',
        subjectType: 'user',
        actions: i % 2 === 0 ? ['read'] : ['read', 'write'],
        resourceType: 'document',
        condition: `principal.level >= ${i}`,
      }),
    );
    const source = fakeSource([]);
    const { store, controller } = startController(source, { leading: true });
    const key: ObjectKey = { kind: 'Rule', namespace: NS, name: 'team' };
    for (const [i, spec] of specs.entries()) {
      source.objects.set('Rule/acme/team', sourceObject('Rule', 'team', spec, { generation: i + 1 }));
      controller.enqueue(key);
      await controller.idle();
      const translation = source.writes.at(-1)?.status['translation'] as { spec?: unknown; rego?: string } | undefined;
      const rule = store
        .snapshot()
        .tenants.get(NS)
        ?.index.rules.find((r) => r.model.name === 'team');
      expect(translation?.spec).toBe(spec);
      expect(rule?.model.actions).toBe(spec.actions);
      expect(translation?.rego).toBe(rule && ruleTranslation(rule.model, 0, false).text);
    }
  });

  it('keeps the schema output when the schema fills something in (a default state)', async () => {
    const spec = deepFreeze({ subjectType: 'user', actions: ['read'], resourceType: 'document' });
    const source = fakeSource([sourceObject('Rule', 'draft', spec, { generation: 1 })]);
    const { controller } = startController(source, { leading: true });
    controller.enqueue({ kind: 'Rule', namespace: NS, name: 'draft' });
    await controller.idle();
    const translation = source.writes.at(-1)?.status['translation'] as { spec?: Record<string, unknown> } | undefined;
    expect(translation?.spec).not.toBe(spec);
    expect(translation?.spec).toEqual({ ...spec, state: 'Draft' });
  });
});
