import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
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
    const hub = createLiveHub({ version: () => '1', alive: () => true });
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
