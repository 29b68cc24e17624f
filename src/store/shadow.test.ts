import { describe, expect, it } from 'vitest';
import { compileRule } from '../policy/index.ts';
import { ruleModelFor } from '../../test/support/rules.ts';
import { createStore } from './index.ts';

const proposed = (name: string, condition?: string) =>
  compileRule(ruleModelFor(name, { state: 'Proposed', ...(condition === undefined ? {} : { condition }) }));

describe("a tenant's proposal in the store", () => {
  it('publishes no shadow for a tenant without a proposal', () => {
    const store = createStore();
    store.draft.setRule('acme', 'live', compileRule(ruleModelFor('live')));
    store.publish();
    expect(store.snapshot().tenants.get('acme')?.shadow).toBeUndefined();
  });

  it('publishes Proposed rules indexed, and removal marks, only after publish', () => {
    const store = createStore();
    store.draft.setRule('acme', 'live', compileRule(ruleModelFor('live')));
    store.publish();
    const before = store.snapshot();
    store.draft.setShadowRule('acme', 'new', { role: 'Proposed', rule: proposed('new') });
    store.draft.setShadowRule('acme', 'live', { role: 'Removal' });
    expect(store.snapshot()).toBe(before);
    expect(store.draft.shadowRule('acme', 'live')).toEqual({ role: 'Removal' });
    store.publish();
    const shadow = store.snapshot().tenants.get('acme')?.shadow;
    expect(shadow?.proposed.candidates('user', 'read', 'document').map((r) => r.model.name)).toEqual(['new']);
    expect([...(shadow?.removals ?? [])]).toEqual(['live']);
    // The live index never holds a Proposed rule.
    expect(
      store
        .snapshot()
        .tenants.get('acme')
        ?.index.rules.map((r) => r.model.name),
    ).toEqual(['live']);
    expect(before.tenants.get('acme')?.shadow).toBeUndefined();
  });

  it('keeps the proposed index (the same object) across publishes that did not change the proposal', () => {
    const store = createStore();
    const rule = proposed('new');
    store.draft.setShadowRule('acme', 'new', { role: 'Proposed', rule });
    store.publish();
    const first = store.snapshot().tenants.get('acme')?.shadow;
    store.draft.setRule('acme', 'other', compileRule(ruleModelFor('other')));
    store.draft.setShadowRule('acme', 'new', { role: 'Proposed', rule });
    store.publish();
    expect(store.snapshot().tenants.get('acme')?.shadow).toBe(first);
    store.draft.setShadowRule('acme', 'other', { role: 'Removal' });
    store.publish();
    const third = store.snapshot().tenants.get('acme')?.shadow;
    expect(third?.proposed).toBe(first?.proposed);
    expect([...(third?.removals ?? [])]).toEqual(['other']);
  });

  it('publishes a tenant that has only Proposed rules, and drops it when the last one goes', () => {
    const store = createStore();
    store.draft.setShadowRule('acme', 'new', { role: 'Proposed', rule: proposed('new') });
    store.publish();
    expect(store.snapshot().tenants.get('acme')?.index.size).toBe(0);
    store.draft.setShadowRule('acme', 'new', undefined);
    store.publish();
    expect(store.snapshot().tenants.has('acme')).toBe(false);
  });

  it('after many edits in a row, publishes exactly the last of each, and never changes a published set', () => {
    const store = createStore();
    store.draft.setRule('acme', 'live', compileRule(ruleModelFor('live')));
    const published: { removals: string[]; proposed: string[]; set: ReadonlySet<string> | undefined }[] = [];
    for (let i = 0; i < 200; i++) {
      store.draft.setShadowRule(
        'acme',
        `p${i % 7}`,
        i % 3 === 0 ? undefined : { role: 'Proposed', rule: proposed(`p${i % 7}`, `principal.n == ${i}`) },
      );
      store.draft.setShadowRule('acme', 'live', i % 2 === 0 ? { role: 'Removal' } : undefined);
      if (i % 5 === 4) {
        store.publish();
        const s = store.snapshot().tenants.get('acme')?.shadow;
        published.push({
          removals: [...(s?.removals ?? [])],
          proposed: (s?.proposed.rules ?? []).map((r) => r.model.conditionText ?? ''),
          set: s?.removals,
        });
      }
    }
    for (const p of published) expect([...(p.set ?? [])]).toEqual(p.removals);
    const last = store.snapshot().tenants.get('acme')?.shadow;
    // i = 199: live unmarked; p0..p6 last set at i = 196..199 and before.
    expect(last?.removals.size).toBe(0);
    const expected = new Map<string, string | undefined>();
    for (let i = 0; i < 200; i++) expected.set(`p${i % 7}`, i % 3 === 0 ? undefined : `principal.n == ${i}`);
    expect(Object.fromEntries((last?.proposed.rules ?? []).map((r) => [r.model.name, r.model.conditionText]))).toEqual(
      Object.fromEntries([...expected].filter(([, c]) => c !== undefined)),
    );
  });
});
