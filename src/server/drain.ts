// Graceful close of a listener without the keep-alive race. Node's server.close() destroys every idle
// keep-alive connection at once; a client that has just sent its next request on one (its bytes in
// flight, not yet read) then sees the connection drop without an answer: a failed decision or bundle
// poll during every rolling upgrade or failover. Here, once draining, the listener stops accepting,
// every answer carries `Connection: close` (so a busy client moves to another replica after its
// current request), and a connection is ended only after it has been idle for `idleMs`: a client that
// waited that long is not sending at that instant, and one that was sends on a socket already closed
// with a FIN, which HTTP clients notice and replace before using.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as HttpsServer } from 'node:https';
import { Server as NetServer, type Socket } from 'node:net';

interface Tracked {
  inFlight: number;
  idleSince: number;
}

export interface DrainOptions {
  /** End a connection once it has had no request in flight for this long. */
  readonly idleMs: number;
  /** Then destroy whatever is left (a request that never finishes). */
  readonly forceAfterMs: number;
  /** How often idle connections are looked at. */
  readonly checkEveryMs?: number;
}

export interface Drainer {
  /** Stops accepting, answers with `Connection: close`, and resolves once every connection is closed. */
  drain(options: DrainOptions): Promise<void>;
  /** Whether drain() was called: answers then carry `Connection: close`. */
  draining(): boolean;
}

/** Tracks the listener's connections from now on; call before it accepts its first one. */
export function trackConnections(server: Server | HttpsServer, now: () => number = Date.now): Drainer {
  const sockets = new Map<Socket, Tracked>();
  let draining = false;
  let closed: (() => void) | undefined;
  // A TLS listener's requests arrive on the TLS socket, which 'secureConnection' hands over.
  const event = server instanceof HttpsServer ? 'secureConnection' : 'connection';
  server.on(event, (socket: Socket) => {
    sockets.set(socket, { inFlight: 0, idleSince: now() });
    socket.once('close', () => {
      sockets.delete(socket);
      closed?.();
    });
  });
  // One function for every response, not a closure (and a once-wrapper) per request: this runs on
  // every decision. A response closes once, so `on` is enough; its request still names the socket.
  function responseClosed(this: ServerResponse): void {
    const tracked = sockets.get(this.req.socket);
    if (tracked) {
      tracked.inFlight -= 1;
      tracked.idleSince = now();
    }
  }
  // Before the application's listener, so the header is set before anything is written.
  server.prependListener('request', function requestStarted(req: IncomingMessage, res: ServerResponse) {
    const tracked = sockets.get(req.socket);
    if (tracked) {
      tracked.inFlight += 1;
      res.on('close', responseClosed);
    }
    if (draining) res.setHeader('Connection', 'close');
  });
  return {
    draining: () => draining,
    drain(options) {
      draining = true;
      return new Promise<void>((resolve) => {
        let listenerClosed = false;
        let timer: NodeJS.Timeout | undefined;
        const finish = () => {
          if (!listenerClosed || sockets.size > 0) return;
          clearInterval(timer);
          clearTimeout(force);
          resolve();
        };
        // net.Server's own close: stops accepting and keeps the open connections (http's close
        // would destroy the idle ones at once, which is the race this module exists to avoid).
        NetServer.prototype.close.call(server, () => {
          listenerClosed = true;
          finish();
        });
        const check = () => {
          const t = now();
          for (const [socket, tracked] of sockets) {
            if (tracked.inFlight === 0 && t - tracked.idleSince >= options.idleMs) socket.end();
          }
        };
        timer = setInterval(check, options.checkEveryMs ?? Math.max(10, Math.min(250, options.idleMs / 4)));
        const force = setTimeout(() => {
          for (const socket of sockets.keys()) socket.destroy();
        }, options.forceAfterMs);
        closed = finish;
        check();
      });
    },
  };
}
