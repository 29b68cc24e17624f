import { describe, expect, it } from 'vitest';
import type { ObjectKey } from '../controller/index.ts';
import { startShadowStatus } from './shadow-status.ts';

describe('the periodic status.shadow pass', () => {
  it('enqueues only the rules whose counts moved, as leader, and shares this replica’s own changes', () => {
    const changes = [
      { rules: ['acme/senior-reads', 'globex/a.b'], local: true },
      { rules: ['acme/other'], local: false },
      { rules: [], local: false },
    ];
    const enqueued: ObjectKey[] = [];
    let shared = 0;
    let leading = true;
    const s = startShadowStatus({
      view: { takeChanged: () => changes.shift() ?? { rules: [], local: false } },
      enqueue: (k) => enqueued.push(k),
      leading: () => leading,
      shared: () => shared++,
      everyMs: 3_600_000,
    });
    s.tick();
    expect(enqueued).toEqual([
      { kind: 'Rule', namespace: 'acme', name: 'senior-reads' },
      { kind: 'Rule', namespace: 'globex', name: 'a.b' },
    ]);
    expect(shared).toBe(1);
    leading = false;
    s.tick();
    s.tick();
    expect(enqueued).toHaveLength(2);
    expect(shared).toBe(1);
    s.stop();
  });
});
