import { describe, expect, it } from 'vitest';
import { coalesce } from './coalesce.ts';

/** A pass the test finishes by hand, counting how many started. */
function gatedPass() {
  const gates: (() => void)[] = [];
  let started = 0;
  const pass = () => {
    started++;
    return new Promise<void>((resolve) => gates.push(resolve));
  };
  const release = async () => {
    gates.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { pass, release, started: () => started };
}

describe('coalesce', () => {
  it('collapses any number of requests made during a pass into exactly one more pass, all answered by the same run', async () => {
    const g = gatedPass();
    const run = coalesce(g.pass);
    const first = run();
    const during = Array.from({ length: 100 }, () => run());
    expect(during.every((p) => p === first)).toBe(true);
    expect(g.started()).toBe(1);
    await g.release();
    expect(g.started()).toBe(2);
    await g.release();
    await Promise.all([first, ...during]);
    expect(g.started()).toBe(2);
    // Idle again: the next request starts a new run.
    const next = run();
    expect(next).not.toBe(first);
    await g.release();
    await next;
    expect(g.started()).toBe(3);
  });

  it('ends the run when more() says so, and after a pass that throws a later request runs again', async () => {
    let stopped = false;
    const g = gatedPass();
    const run = coalesce(g.pass, () => !stopped);
    const first = run();
    run();
    stopped = true;
    await g.release();
    await first;
    expect(g.started()).toBe(1);

    let calls = 0;
    const failing = coalesce(async () => {
      calls++;
      if (calls === 1) throw new Error('boom');
    });
    await expect(failing()).rejects.toThrow('boom');
    await failing();
    expect(calls).toBe(2);
  });
});
