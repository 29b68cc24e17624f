import { describe, expect, it } from 'vitest';
import { createLongPolls, preferWait } from './longpoll.ts';
import { noneMatch } from './bundles.ts';

describe('preferWait', () => {
  it.each([
    ['wait=30', 30],
    ['modes=long-polling;wait=30', 30],
    ['respond-async, wait=5', 5],
    ['WAIT = 7', 7],
    ['wait="9"', 9],
  ])('reads %j', (header, seconds) => {
    expect(preferWait(header)).toBe(seconds);
  });

  it.each([undefined, '', 'wait=0', 'wait=-1', 'wait=abc', 'nowait=5', 'wait=5x', 'wait=1234567890'])('ignores %j', (header) => {
    expect(preferWait(header)).toBeUndefined();
  });
});

describe('noneMatch', () => {
  const etag = '"abc"';
  it.each(['"abc"', 'W/"abc"', '"x", "abc"', ' * '])('matches %j', (h) => {
    expect(noneMatch(h, etag)).toBe(true);
  });
  it.each([undefined, '', '"ab"', 'abc', '"abc', '"x"'])('does not match %j', (h) => {
    expect(noneMatch(h, etag)).toBe(false);
  });
});

describe('createLongPolls', () => {
  it('releases every waiter of a changed bundle once, and no other', () => {
    const polls = createLongPolls();
    const released: string[] = [];
    polls.hold('a/x', 60_000, (why) => released.push(`1:${why}`));
    polls.hold('a/x', 60_000, (why) => released.push(`2:${why}`));
    polls.hold('a/y', 60_000, (why) => released.push(`3:${why}`));
    polls.changed('a/x');
    polls.changed('a/x');
    expect(released).toEqual(['1:changed', '2:changed']);
    expect(polls.size()).toBe(1);
    polls.releaseAll();
    expect(released).toEqual(['1:changed', '2:changed', '3:shutdown']);
    expect(polls.size()).toBe(0);
  });

  it('never releases a cancelled waiter', () => {
    const polls = createLongPolls();
    let calls = 0;
    const cancel = polls.hold('a/x', 60_000, () => {
      calls++;
    });
    cancel();
    polls.changed('a/x');
    polls.releaseAll();
    expect(calls).toBe(0);
    expect(polls.size()).toBe(0);
  });

  it('times waiters out through one timer per deadline bucket', async () => {
    const polls = createLongPolls();
    const released = await new Promise<string>((resolve) => {
      polls.hold('a/x', 10, resolve);
    });
    expect(released).toBe('timeout');
    expect(polls.size()).toBe(0);
  });
});
