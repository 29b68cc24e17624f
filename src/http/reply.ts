// How the API writes a successful answer and the X-Request-ID echo, and the 401 of a request
// without a valid API key; error bodies and their statuses are errors.ts's.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError, WWW_AUTHENTICATE } from './errors.ts';

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

/** The request's X-Request-ID when it is printable and short (echoed as it came), else undefined. */
export function requestId(req: IncomingMessage): string | undefined {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : undefined;
}

/** `headers` plus the X-Request-ID echo when there is an id (AuthZEN: the PDP MUST echo it). */
export function withRequestId(id: string | undefined, headers: Record<string, string> = {}): Record<string, string> {
  return id === undefined ? headers : { ...headers, 'X-Request-ID': id };
}

/** `headers` plus the echo of the request's own X-Request-ID, as on every answer, errors included. */
export function echoed(req: IncomingMessage, headers: Record<string, string> = {}): Record<string, string> {
  return withRequestId(requestId(req), headers);
}

/** Content-Type and Content-Length of a JSON payload; no Cache-Control, since a POST reply is not stored (RFC 9111 3). */
export function jsonHeaders(payload: string): Record<string, string | number> {
  return { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(payload) };
}

/** Answers 200 with `body` as JSON, `headers` first. */
export function sendJson(res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(200, { ...headers, ...jsonHeaders(payload) });
  res.end(payload);
}

/** Answers 200 with `body` as JSON that no cache keeps: what the service knows, read with a credential. */
export function sendUncachedJson(res: ServerResponse, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(200, { ...jsonHeaders(payload), 'Cache-Control': 'no-store' });
  res.end(payload);
}

/** Answers the 401 of a request without a valid API key, draining its body. */
export function sendUnauthenticated(req: IncomingMessage, res: ServerResponse, id: string | undefined): void {
  req.resume();
  const message = req.headers.authorization ? 'the API key is not valid' : 'an API key is required: Authorization: Bearer <key>';
  sendError(res, 'unauthenticated', message, { ...withRequestId(id), 'WWW-Authenticate': WWW_AUTHENTICATE });
}
