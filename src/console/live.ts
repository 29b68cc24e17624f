// Live updates (docs/design/console.md): one Server-Sent Events stream per open page. While at least
// one stream is open, a once-a-second tick compares, for each stream, what its session may see (a
// publish, an agent report, a sync, a decision OPA reported, a status write: of its tenant, or of any
// for the admin) with what it saw at the last tick, and sends one `change` event when it moved: a burst
// of changes costs a page one refresh per second, another tenant's changes cost it nothing (nor tell it
// that the other tenant is active), and with no page open the console costs nothing at all.
import type { ServerResponse } from 'node:http';

export interface LiveHubOptions {
  /**
   * A value that moves whenever something the session's pages show may have changed; undefined once the
   * session has ended (its streams are told so, then closed).
   */
  readonly version: (sessionId: string) => string | undefined;
  readonly tickMs?: number;
  /** A comment line this often keeps proxies (kubectl port-forward) from closing an idle stream. */
  readonly heartbeatMs?: number;
}

export interface LiveHub {
  /** Streams to `res` until the client goes or the session ends. */
  open(res: ServerResponse, sessionId: string): void;
  /** Open streams now. */
  size(): number;
  /** Ends every stream (the console is closing). */
  close(): void;
}

const DEFAULT_TICK_MS = 1000;
/** Streams one session may hold (tabs), and the console in all; the oldest is closed to make room. */
const MAX_PER_SESSION = 8;
const MAX_STREAMS = 256;
const DEFAULT_HEARTBEAT_MS = 25_000;

export function createLiveHub(o: LiveHubOptions): LiveHub {
  const tickMs = o.tickMs ?? DEFAULT_TICK_MS;
  const heartbeatMs = o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  /** Each open stream: its session, and the version it was last told of (or opened at). */
  const streams = new Map<ServerResponse, { readonly session: string; last: string }>();
  let timer: NodeJS.Timeout | undefined;
  let sinceBeat = 0;

  const end = (res: ServerResponse): void => {
    streams.delete(res);
    if (!res.writableEnded) res.end();
    if (streams.size === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  const tick = (): void => {
    sinceBeat += tickMs;
    const beat = sinceBeat >= heartbeatMs;
    if (beat) sinceBeat = 0;
    // A session's tabs share one look at what it may see.
    const versions = new Map<string, string | undefined>();
    for (const [res, stream] of streams) {
      if (!versions.has(stream.session)) versions.set(stream.session, o.version(stream.session));
      const now = versions.get(stream.session);
      if (now === undefined) {
        res.write('event: signedout\ndata: {}\n\n');
        end(res);
      } else if (now !== stream.last) {
        stream.last = now;
        res.write(`event: change\ndata: ${JSON.stringify({ version: now })}\n\n`);
      } else if (beat) res.write(': still here\n\n');
    }
  };
  return {
    open(res, sessionId) {
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Accel-Buffering': 'no',
      });
      // A reconnecting browser waits 3 s; the first line tells it the stream is up.
      res.write('retry: 3000\n\n');
      const mine = [...streams.keys()].filter((r) => streams.get(r)?.session === sessionId);
      if (mine.length >= MAX_PER_SESSION) end(mine[0] as ServerResponse);
      if (streams.size >= MAX_STREAMS) end(streams.keys().next().value as ServerResponse);
      streams.set(res, { session: sessionId, last: o.version(sessionId) ?? '' });
      res.on('close', () => end(res));
      if (!timer) {
        sinceBeat = 0;
        timer = setInterval(tick, tickMs);
        timer.unref();
      }
    },
    size: () => streams.size,
    close() {
      for (const res of [...streams.keys()]) end(res);
    },
  };
}
