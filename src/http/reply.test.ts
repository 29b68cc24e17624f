import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { requestId, setRequestIdEcho, withRequestId } from './reply.ts';

/** A request whose X-Request-ID is `value` as Node would hand it over (or as a bug might). */
function requestWith(value: string | undefined): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  if (value !== undefined) req.headers['x-request-id'] = value;
  return req;
}

describe('the X-Request-ID echo', () => {
  it('takes every value of visible ASCII, spaces and tabs up to 200 characters, empty included', () => {
    for (const id of ['cert probe 42', 'a\tb', '', ' ', '!"#~', 'r'.repeat(200)]) expect(requestId(requestWith(id))).toBe(id);
  });

  it('refuses a longer value, bytes above 0x7f and every control but the tab', () => {
    for (const id of ['r'.repeat(201), 'caf\u00e9', '\u00ff', 'a\r\nInjected: yes', 'a\nb', 'a\rb', 'a\u0000b', 'a\u007fb', '\u20ac'])
      expect(requestId(requestWith(id)), JSON.stringify(id)).toBeUndefined();
    expect(requestId(requestWith(undefined))).toBeUndefined();
  });

  it('never sets a header that would split the answer, which Node would refuse anyway', () => {
    const req = requestWith('a\r\nInjected: yes');
    const res = new ServerResponse(req);
    setRequestIdEcho(req, res);
    expect(res.getHeaderNames()).toEqual([]);
    // The second line of defence: Node's own check of a header value.
    expect(() => res.setHeader('X-Request-ID', 'a\r\nInjected: yes')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_CHAR' }));
  });

  it('sets the echo of an accepted value before any handler answers', () => {
    const req = requestWith('cert probe 42');
    const res = new ServerResponse(req);
    setRequestIdEcho(req, res);
    expect(res.getHeader('x-request-id')).toBe('cert probe 42');
  });

  it('adds no object to a request that sent no id: the headers are one shared, frozen empty set', () => {
    // Decisions without an X-Request-ID are the common case; each used to make an empty object for nothing.
    const none = withRequestId(undefined);
    expect(none).toEqual({});
    expect(withRequestId(undefined)).toBe(none);
    expect(Object.isFrozen(none)).toBe(true);
    expect(withRequestId('r-1')).toEqual({ 'X-Request-ID': 'r-1' });
  });
});
