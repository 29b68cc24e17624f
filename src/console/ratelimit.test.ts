import { describe, expect, it } from 'vitest';
import { createSignInLimiter, type SignInLimitOptions } from './ratelimit.ts';

function limiterAt(extra: Partial<SignInLimitOptions> = {}) {
  let nowMs = 5_000_000;
  const limiter = createSignInLimiter({ now: () => nowMs, ...extra });
  return { limiter, advance: (ms: number) => (nowMs += ms) };
}

const attempts = (limiter: ReturnType<typeof createSignInLimiter>, ip: string, n: number) =>
  Array.from({ length: n }, () => limiter.attempt(ip));

describe('the sign-in limiter', () => {
  it('allows 5 attempts at once from one IP, then refuses with when to come back', () => {
    const { limiter } = limiterAt();
    expect(attempts(limiter, '10.0.0.1', 5).every((v) => v.ok)).toBe(true);
    expect(limiter.attempt('10.0.0.1')).toEqual({ ok: false, retryAfterSeconds: 12 });
    expect(limiter.attempt('10.0.0.2')).toEqual({ ok: true });
  });

  it('gives one attempt back every 12 seconds, and a refused attempt takes nothing', () => {
    const { limiter, advance } = limiterAt();
    attempts(limiter, 'a', 5);
    advance(6_000);
    expect(limiter.attempt('a')).toEqual({ ok: false, retryAfterSeconds: 6 });
    advance(5_999);
    expect(limiter.attempt('a')).toEqual({ ok: false, retryAfterSeconds: 1 });
    advance(1);
    expect(limiter.attempt('a')).toEqual({ ok: true });
    expect(limiter.attempt('a').ok).toBe(false);
    advance(60_000);
    expect(attempts(limiter, 'a', 6).map((v) => v.ok)).toEqual([true, true, true, true, true, false]);
  });

  it('allows 60 attempts a minute overall, whatever the IPs', () => {
    const { limiter, advance } = limiterAt();
    const verdicts = Array.from({ length: 61 }, (_, i) => limiter.attempt(`10.0.${i}.1`));
    expect(verdicts.filter((v) => v.ok)).toHaveLength(60);
    expect(verdicts[60]).toEqual({ ok: false, retryAfterSeconds: 1 });
    advance(1_000);
    expect(limiter.attempt('10.9.9.9')).toEqual({ ok: true });
  });

  it('takes its limits from the options', () => {
    const { limiter } = limiterAt({ perIp: { perMinute: 1, burst: 2 }, overall: { perMinute: 600, burst: 600 } });
    expect(attempts(limiter, 'a', 3).map((v) => v.ok)).toEqual([true, true, false]);
    expect(limiter.attempt('a')).toEqual({ ok: false, retryAfterSeconds: 60 });
    expect(() => createSignInLimiter({ now: () => 0, perIp: { perMinute: 0, burst: 5 } })).toThrow(/perIp/);
  });

  it('tracks a bounded number of IPs, forgetting full buckets first, then the least recently seen', () => {
    const { limiter, advance } = limiterAt({ maxTrackedIps: 3, overall: { perMinute: 6000, burst: 6000 } });
    attempts(limiter, 'a', 5);
    attempts(limiter, 'b', 5);
    attempts(limiter, 'c', 1);
    advance(12_000);
    limiter.attempt('d');
    expect(limiter.trackedIps()).toBe(3);
    // c had refilled to full and was forgotten; a and b are still held to their limit.
    expect(limiter.attempt('a').ok).toBe(true);
    expect(limiter.attempt('a').ok).toBe(false);
    limiter.attempt('e');
    expect(limiter.trackedIps()).toBe(3);
    // b was least recently seen: forgotten, it starts afresh.
    expect(attempts(limiter, 'b', 5).every((v) => v.ok)).toBe(true);
  });
});

describe('a right key', () => {
  it('gives its token back, so only wrong keys count against the limit', () => {
    const limiter = createSignInLimiter({ now: () => 0 });
    for (let i = 0; i < 20; i++) {
      expect(limiter.attempt('10.0.0.1').ok).toBe(true);
      limiter.succeeded('10.0.0.1');
    }
    for (let i = 0; i < 5; i++) expect(limiter.attempt('10.0.0.1').ok).toBe(true);
    expect(limiter.attempt('10.0.0.1').ok).toBe(false);
  });
});
