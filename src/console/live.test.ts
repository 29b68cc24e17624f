import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLiveHub } from './live.ts';

/** A response that records what was written and whether it ended. */
function response(): ServerResponse & { readonly text: () => string } {
  const chunks: string[] = [];
  const res = Object.assign(new EventEmitter(), {
    writableEnded: false,
    writeHead: () => res,
    write: (chunk: string) => chunks.push(chunk) > 0,
    end: () => {
      res.writableEnded = true;
      res.emit('close');
      return res;
    },
    text: () => chunks.join(''),
  });
  return res as unknown as ServerResponse & { readonly text: () => string };
}

describe('the live hub', () => {
  it('holds at most 8 streams per session, closing the oldest for a new one', () => {
    const hub = createLiveHub({ version: () => '1' });
    const streams = Array.from({ length: 9 }, () => response());
    for (const r of streams) hub.open(r, 'session-a');
    hub.open(response(), 'session-b');
    expect(hub.size()).toBe(9);
    expect(streams[0]?.writableEnded).toBe(true);
    expect(streams[1]?.writableEnded).toBe(false);
    hub.close();
    expect(hub.size()).toBe(0);
  });
});

describe('the live hub, once a second', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const changes = (r: { text(): string }): number => r.text().split('event: change').length - 1;

  it('tells each stream only when what its own session sees moved', () => {
    vi.useFakeTimers();
    const versions = new Map([
      ['acme', 0],
      ['records', 0],
    ]);
    const hub = createLiveHub({ version: (session) => String(versions.get(session)) });
    const acme = response();
    const acmeTab = response();
    const records = response();
    hub.open(acme, 'acme');
    hub.open(acmeTab, 'acme');
    hub.open(records, 'records');
    for (let i = 0; i < 10; i++) {
      versions.set('records', i + 1);
      vi.advanceTimersByTime(1000);
    }
    expect(changes(records)).toBe(10);
    expect(changes(acme)).toBe(0);
    // A burst within one second is one change; both tabs hear it.
    versions.set('acme', 1);
    versions.set('acme', 2);
    vi.advanceTimersByTime(1000);
    expect(changes(acme)).toBe(1);
    expect(changes(acmeTab)).toBe(1);
    expect(acme.text()).toContain('data: {"version":"2"}');
    vi.advanceTimersByTime(5000);
    expect(changes(acme)).toBe(1);
    hub.close();
  });

  it('compares a stream opened later with what it saw when it opened', () => {
    vi.useFakeTimers();
    let version = 0;
    const hub = createLiveHub({ version: () => String(version) });
    const first = response();
    hub.open(first, 'a');
    version = 1;
    const second = response();
    hub.open(second, 'b');
    vi.advanceTimersByTime(1000);
    expect(changes(first)).toBe(1);
    expect(changes(second)).toBe(0);
    hub.close();
  });

  it('tells the streams of a session that ended so, and closes them', () => {
    vi.useFakeTimers();
    let signedIn = true;
    const hub = createLiveHub({ version: () => (signedIn ? '1' : undefined) });
    const r = response();
    hub.open(r, 'a');
    vi.advanceTimersByTime(1000);
    expect(r.writableEnded).toBe(false);
    signedIn = false;
    vi.advanceTimersByTime(1000);
    expect(r.text()).toContain('event: signedout');
    expect(r.writableEnded).toBe(true);
    expect(hub.size()).toBe(0);
  });
});
