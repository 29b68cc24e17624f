// The one place a throw becomes an answer (STYLE habit 6): expected failures are values, so
// whatever escapes a handler is a bug, logged with `err` and answered 500; a client error that
// Express itself found keeps its 4xx.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { sendError } from './errors.ts';
import { echoed } from './reply.ts';

/** Where throws are caught: what the log line says of the request, and what the 500 carries. */
export interface ThrowSite<R extends IncomingMessage = IncomingMessage> {
  readonly log: Logger;
  /** The log line's fields besides `err`: where the request went, never what it carried. */
  readonly fields: (req: R) => Record<string, unknown>;
  /** Told after each 500 it answers (a per-endpoint metric). */
  readonly answered?: () => void;
}

/** Logs a thrown bug with `err` and answers 500 "internal error" (or ends a reply already under way). */
export function answerThrow<R extends IncomingMessage>(site: ThrowSite<R>, req: R, res: ServerResponse, err: unknown): void {
  site.log.error({ err, ...site.fields(req) }, 'Failed to serve request');
  sendError(res, 'internal', 'internal error', echoed(req));
  site.answered?.();
}

/**
 * `fn`, with a throw answered by `answerThrow`: for the callbacks of stream events and promises,
 * where a throw would end the process.
 */
export function guarded<T, R extends IncomingMessage>(
  site: ThrowSite<R>,
  req: R,
  res: ServerResponse,
  fn: (arg: T) => void,
): (arg: T) => void {
  return function guardedCall(arg) {
    try {
      fn(arg);
    } catch (err) {
      answerThrow(site, req, res, err);
    }
  };
}

/** The status a framework error asks for (Express's router sets 400 on a path it cannot decode). */
function clientStatus(err: unknown): number | undefined {
  const status = typeof err === 'object' && err !== null && 'status' in err ? err.status : undefined;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

/** The Express error middleware of both apps: a client error the framework found, or a bug answered 500. */
export function errorMiddleware(log: Logger): (err: unknown, req: Request, res: Response, next: NextFunction) => void {
  const site: ThrowSite<Request> = { log, fields: (req) => ({ method: req.method, path: req.path.slice(0, 200) }) };
  return function onError(err, req, res, _next) {
    const status = clientStatus(err);
    if (status === undefined) {
      answerThrow(site, req, res, err);
      return;
    }
    const code = status === 404 ? 'not_found' : status === 413 ? 'too_large' : 'bad_request';
    const message = err instanceof URIError ? 'the path is not valid percent-encoded UTF-8' : 'the request cannot be read';
    sendError(res, code, message);
  };
}
