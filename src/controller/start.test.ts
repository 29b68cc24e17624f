// What a start costs per Rule: each is translated to Rego once, for its status and its bundles alike.
import { describe, expect, it, vi } from 'vitest';
import { fakeSource, sourceObject as object, startController } from '../../test/support/controller.ts';
import * as regorule from '../policy/regorule.ts';

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
});
