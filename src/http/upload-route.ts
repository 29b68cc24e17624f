// How every OPA upload route (status reports, decision logs) begins: the connector token judged
// as the bundle route judges it (connector.ts), a refusal answered without reading the body, then
// the body read (upload.ts) and handed to the route, a throw in its answer guarded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { UploadOutcome } from '../metrics.ts';
import { judgeConnector, type ConnectorPath, type ConnectorVerdict } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { sendError, WWW_AUTHENTICATE, type FailureCode } from './errors.ts';
import { guarded, type ThrowSite } from './guard.ts';
import { readUpload, type UploadText } from './upload.ts';

/** One upload route: where its throws are logged, how it counts answers, what it does with a body. */
export interface UploadRoute {
  readonly site: ThrowSite;
  /** Counts an answer by outcome, on the route's own counter. */
  readonly count: (outcome: UploadOutcome) => void;
  /** Whether the upload of a refused token is still read (a status report of a known agent is). */
  readonly readsRefused: (verdict: ConnectorVerdict) => boolean;
  /** Answers the upload once its body is read. */
  readonly answer: (req: IncomingMessage, res: ServerResponse, path: ConnectorPath, verdict: ConnectorVerdict, text: UploadText) => void;
}

const OUTCOME: Partial<Record<FailureCode, UploadOutcome>> = {
  bad_request: 'bad_request',
  unauthenticated: 'unauthenticated',
  forbidden: 'forbidden',
  not_found: 'not_found',
  too_large: 'too_large',
};

/** Answers a refusal; a body not yet read is not, so the connection closes after it (a large upload is not drained). */
export function refuseUpload(req: IncomingMessage, res: ServerResponse, code: FailureCode, message: string): void {
  const headers: Record<string, string> = code === 'unauthenticated' ? { 'WWW-Authenticate': WWW_AUTHENTICATE } : {};
  if (req.readableEnded) sendError(res, code, message, headers);
  else {
    sendError(res, code, message, { ...headers, Connection: 'close' });
    req.resume();
  }
}

/** Serves one upload to `path`: judged, refused unread or read, then answered by the route. */
export function serveUpload(
  deps: Pick<ApiDeps, 'store' | 'fleet'>,
  route: UploadRoute,
  req: IncomingMessage,
  res: ServerResponse,
  path: ConnectorPath,
): void {
  const verdict = judgeConnector(deps.store.snapshot(), path, req.headers.authorization);
  if (verdict.code !== 'ok' && !route.readsRefused(verdict)) {
    refuseUpload(req, res, verdict.code, verdict.message);
    route.count(OUTCOME[verdict.code] ?? 'bad_request');
    return;
  }
  readUpload(
    req,
    deps.fleet.maxUploadBytes,
    guarded(route.site, req, res, function uploadBody(text: UploadText) {
      route.answer(req, res, path, verdict, text);
    }),
  );
}
