// How the API writes a successful answer and the X-Request-ID echo, and the 401 of a request
// without a valid API key; error bodies and their statuses are errors.ts's.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError, WWW_AUTHENTICATE } from './errors.ts';

/**
 * The X-Request-ID values echoed (AuthZEN 1.0 and its certification scenario: the PDP returns the
 * same value): any field value a client may send (RFC 9110 5.5) of visible ASCII, spaces and tabs,
 * empty included, up to REQUEST_ID_MAX characters. Node has already dropped leading and trailing
 * spaces and tabs, joined a repeated header with ", " (RFC 9110 5.3), and refused CR, LF and other
 * controls with a 400 before any handler runs. Bytes 0x80-0xff (obs-text, legal but obsolete) are
 * not echoed: Node reads them as Latin-1 but writes the head as UTF-8 when it goes out in one write
 * with a string body, as a JSON answer does, so the client would get other bytes, not its value.
 */
const REQUEST_ID = /^[\t\x20-\x7e]*$/;
/** Longer ids are not echoed (nor logged): an id is echoed whole or not at all, never cut. */
const REQUEST_ID_MAX = 200;

/** The request's X-Request-ID when it can be echoed as it came (REQUEST_ID), else undefined. */
export function requestId(req: IncomingMessage): string | undefined {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && given.length <= REQUEST_ID_MAX && REQUEST_ID.test(given) ? given : undefined;
}

/**
 * Sets the echo of the request's X-Request-ID on `res` before any handler runs, so that every
 * answer carries it (writeHead merges headers set earlier).
 */
export function setRequestIdEcho(req: IncomingMessage, res: ServerResponse): void {
  const id = requestId(req);
  if (id !== undefined) res.setHeader('X-Request-ID', id);
}

/** No headers: shared, so a request without an id makes no object for them (nothing writes to it; it is frozen). */
const NO_HEADERS: Record<string, string> = Object.freeze({});

/** `headers` plus the X-Request-ID echo when there is an id (AuthZEN: the PDP MUST echo it). */
export function withRequestId(id: string | undefined, headers: Record<string, string> = NO_HEADERS): Record<string, string> {
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
