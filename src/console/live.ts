// Live updates (docs/design/console.md): one Server-Sent Events stream per open page. While at least
// one stream is open, a once-a-second tick compares what changed (a publish, an agent report, a sync, a
// decision OPA reported, a status write) and sends one `change` event: a burst of changes costs the
// pages one refresh per second, and with no page open the console costs nothing at all.
import type { ServerResponse } from 'node:http';

export interface LiveHubOptions {
  /** A number that moves whenever something a page shows may have changed. */
  readonly version: () => string;
  /** Whether a session is still signed in (a stream of an ended session is told so, then closed). */
  readonly alive: (sessionId: string) => boolean;
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
  const streams = new Map<ServerResponse, string>();
  let timer: NodeJS.Timeout | undefined;
  let last = '';
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
    const now = o.version();
    const changed = now !== last;
    last = now;
    sinceBeat += tickMs;
    const beat = sinceBeat >= heartbeatMs;
    if (beat) sinceBeat = 0;
    for (const [res, session] of streams) {
      if (!o.alive(session)) {
        res.write('event: signedout\ndata: {}\n\n');
        end(res);
      } else if (changed) res.write(`event: change\ndata: ${JSON.stringify({ version: now })}\n\n`);
      else if (beat) res.write(': still here\n\n');
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
      const mine = [...streams].filter(([, s]) => s === sessionId);
      if (mine.length >= MAX_PER_SESSION) end((mine[0] as [ServerResponse, string])[0]);
      if (streams.size >= MAX_STREAMS) end(streams.keys().next().value as ServerResponse);
      streams.set(res, sessionId);
      res.on('close', () => end(res));
      if (!timer) {
        last = o.version();
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
