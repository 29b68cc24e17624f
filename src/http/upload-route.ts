// How every OPA upload route (status reports, decision logs) begins: the connector token judged
// as the bundle route judges it (connector.ts), a refusal answered without reading the body (and
// counted as unrecorded), a place among the uploads held at once (gate.ts) or a 503, then the body
// read as bytes (upload.ts) and handed to the route, which has it read in the uploads thread.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { UploadOutcome } from '../metrics.ts';
import { judgeConnector, type ConnectorPath, type ConnectorVerdict } from './connector.ts';
import type { ApiDeps } from './deps.ts';
import { sendError, STATUS, WWW_AUTHENTICATE, type FailureCode } from './errors.ts';
import type { UploadGate } from './gate.ts';
import { answerThrow, guarded, type ThrowSite } from './guard.ts';
import { readUpload, type UploadBytes } from './upload.ts';

/** One upload route: where its throws are logged, how it counts answers, what it does with a body. */
export interface UploadRoute {
  readonly site: ThrowSite;
  /** Counts an answer by outcome, on the route's own counter. */
  readonly count: (outcome: UploadOutcome) => void;
  /** Counts (and now and then logs) a request refused at the token: nothing of it is recorded. */
  readonly unrecorded: (status: number, path: ConnectorPath, req: IncomingMessage) => void;
  /** Whether the upload of a refused token is still read (the status report of an Inactive connector's own token is). */
  readonly readsRefused: (verdict: ConnectorVerdict) => boolean;
  /** Answers the upload once its bytes are read; settles once answered. */
  readonly answer: (
    req: IncomingMessage,
    res: ServerResponse,
    path: ConnectorPath,
    verdict: ConnectorVerdict,
    body: Extract<UploadBytes, { ok: true }>,
  ) => Promise<void>;
}

/** OPA retries a refused status report or upload; this long at the earliest when too many are held. */
const RETRY_AFTER_S = '5';

const OUTCOME: Partial<Record<FailureCode, UploadOutcome>> = {
  bad_request: 'bad_request',
  unauthenticated: 'unauthenticated',
  forbidden: 'forbidden',
  not_found: 'not_found',
  too_large: 'too_large',
  unavailable: 'unavailable',
};

/** The outcome an answer with `code` counts as. */
export const outcomeOf = (code: FailureCode): UploadOutcome => OUTCOME[code] ?? 'bad_request';

/** Answers a refusal; a body not yet read is not, so the connection closes after it (a large upload is not drained). */
export function refuseUpload(req: IncomingMessage, res: ServerResponse, code: FailureCode, message: string): void {
  const headers: Record<string, string> =
    code === 'unauthenticated' ? { 'WWW-Authenticate': WWW_AUTHENTICATE } : code === 'unavailable' ? { 'Retry-After': RETRY_AFTER_S } : {};
  if (req.readableEnded) sendError(res, code, message, headers);
  else {
    sendError(res, code, message, { ...headers, Connection: 'close' });
    req.resume();
  }
}

/** Serves one upload to `path`: judged, refused unread or read, then answered by the route. */
export function serveUpload(
  deps: Pick<ApiDeps, 'store' | 'fleet'>,
  gate: UploadGate,
  route: UploadRoute,
  req: IncomingMessage,
  res: ServerResponse,
  path: ConnectorPath,
): void {
  const verdict = judgeConnector(deps.store.snapshot(), path, req.headers.authorization);
  if (verdict.code !== 'ok' && !route.readsRefused(verdict)) {
    refuseUpload(req, res, verdict.code, verdict.message);
    route.count(outcomeOf(verdict.code));
    route.unrecorded(STATUS[verdict.code], path, req);
    return;
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  const ticket = gate.enter(Number.isSafeInteger(declared) && declared <= deps.fleet.maxUploadBytes ? declared : 0);
  if (ticket === undefined) {
    // A refusal the body would only have been read for is answered unread (it is cheap and exact).
    if (verdict.code !== 'ok') refuseUpload(req, res, verdict.code, verdict.message);
    else refuseUpload(req, res, 'unavailable', 'too many uploads are being received: retry later');
    route.count(verdict.code !== 'ok' ? outcomeOf(verdict.code) : 'unavailable');
    return;
  }
  // The place is given back once the upload is answered, or its connection closes before a body came.
  let answering: Promise<void> | undefined;
  res.once('close', () => {
    if (answering === undefined) ticket.release();
  });
  readUpload(
    req,
    deps.fleet.maxUploadBytes,
    ticket,
    guarded(route.site, req, res, function uploadBody(body: UploadBytes) {
      if (!body.ok) {
        ticket.release();
        // A body that cannot be read leaves the refusal it was read for as the answer.
        const refusal = verdict.code !== 'ok' ? verdict : body;
        refuseUpload(req, res, refusal.code, refusal.message);
        route.count(outcomeOf(refusal.code));
        return;
      }
      answering = route
        .answer(req, res, path, verdict, body)
        // An answer that throws is a 500, never a crash.
        .catch((err: unknown) => answerThrow(route.site, req, res, err))
        .finally(() => ticket.release());
    }),
  );
}
