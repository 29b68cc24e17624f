// Expected failures are values with a code; this table is the only place codes become HTTP statuses.
import type { ServerResponse } from 'node:http';

export type FailureCode =
  | 'bad_request'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'too_large'
  | 'internal'
  | 'unavailable';

export const STATUS: Record<FailureCode, number> = {
  bad_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  too_large: 413,
  internal: 500,
  unavailable: 503,
};

/** `{"error":{"status":400,"message":"subject.type is required"}}` */
export function sendError(res: ServerResponse, code: FailureCode, message: string, headers: Record<string, string> = {}): void {
  const status = STATUS[code];
  const body = JSON.stringify({ error: { status, message } });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

export const WWW_AUTHENTICATE = 'Bearer realm="acl-operator"';
