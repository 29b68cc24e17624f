// Requests that did not authenticate as the connector they name record nothing (bundle polls stay
// out of sync activity; status reports and decision logs out of agents and decisions): anyone who
// reaches the port could otherwise push the real OPAs out of the bounded views. They are counted
// by status and described at debug level, one line per interval with a count.
import type { IncomingMessage } from 'node:http';
import type { ApiDeps } from './deps.ts';

/** At most one debug line per this interval about requests left unrecorded. */
const UNRECORDED_LOG_MS = 10_000;

/** Notes one unrecorded request: `count` counts it (a metric by status); `message` is the debug line's. */
export function createUnrecorded(
  deps: Pick<ApiDeps, 'log' | 'now'>,
  count: (status: number) => void,
  message: string,
): (status: number, fields: Readonly<Record<string, string>>, req: IncomingMessage) => void {
  let loggedMs = -Infinity;
  let since = 0;
  return function unrecorded(status, fields, req) {
    count(status);
    since++;
    const now = deps.now();
    if (now - loggedMs < UNRECORDED_LOG_MS || !deps.log.isLevelEnabled('debug')) return;
    deps.log.debug({ ...fields, status, clientIp: req.socket.remoteAddress ?? '', requests: since }, message);
    loggedMs = now;
    since = 0;
  };
}
