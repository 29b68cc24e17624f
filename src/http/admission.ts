// POST /admission/validate: the validating admission webhook (Kubernetes mode). The API server posts
// an AdmissionReview v1 for a Rule, Connector, Bundle or Directory being created or updated; the
// answer refuses an invalid one with the message its status would show, or admits it with warnings.
// A body that is not such a review is a 400 with a message (and the request's uid when it has one).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';
import {
  boundWarnings,
  readReview,
  type Review,
  type ReviewedObject,
  reviewResponse,
  verdictOf,
  type WarningsFor,
  withIncoming,
} from '../admission/index.ts';
import { collectBody, notJson, utf8, type BodyFailure } from './body.ts';
import { STATUS, type FailureCode } from './errors.ts';
import { guarded, type ThrowSite } from './guard.ts';
import { jsonHeaders } from './reply.ts';

export const ADMISSION_PATH = '/admission/validate';

/**
 * What became of a review (acl_admission_reviews_total): allowed or denied, a body that is no review
 * we answer (4xx: the API server never sends one, so a client that is not the API server), or a bug (500).
 */
type AdmissionResult = 'allowed' | 'denied' | 'malformed' | 'error';

/**
 * The API server sends the object and, for an UPDATE, its old version: each at most its request
 * limit (3 MiB by default; etcd keeps objects under 1.5 MiB), so a review stays well under this.
 */
const MAX_REVIEW_BYTES = 8 * 1024 * 1024;

export interface AdmissionDeps {
  /** The tenant's Rules, Connectors, Bundles and Directories as this replica holds them now. */
  readonly objectsOf: (namespace: string) => readonly ReviewedObject[];
  /** Warnings (lint findings) for an admitted object; default: none. */
  readonly warningsFor?: WarningsFor;
  /** Largest review body (413 beyond); default 8 MiB. */
  readonly maxReviewBytes?: number;
}

/** The 4xx of a body that is not a review we answer: the house error shape, plus the request's uid when it has one. */
function refuse(req: IncomingMessage, res: ServerResponse, code: FailureCode, message: string, uid: string | undefined): void {
  const payload = JSON.stringify({ error: { status: STATUS[code], message }, ...(uid === undefined ? {} : { uid }) });
  // A body not read to its end is not drained: the connection closes after the answer.
  res.writeHead(STATUS[code], {
    ...jsonHeaders(payload),
    'Cache-Control': 'no-store',
    ...(req.readableEnded ? {} : { Connection: 'close' }),
  });
  res.end(payload);
  if (!req.readableEnded) req.resume();
}

/** The body as JSON: strict UTF-8, then JSON.parse, as the cluster source reads objects (so numbers read alike). */
function parseBody(bytes: Buffer): { ok: true; value: unknown } | { ok: false; message: string } {
  if (bytes.length === 0) return { ok: false, message: 'the body is empty; expected an AdmissionReview' };
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { ok: false, message: 'the body is not valid UTF-8' };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, message: `the body is not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** The webhook's request handler; `log` is the API's logger; every answer is counted in `metrics.admissionReviews`. */
export function createAdmissionHandler(
  deps: AdmissionDeps,
  rootLog: Logger,
  metrics: Pick<Metrics, 'admissionReviews'>,
): (req: IncomingMessage, res: ServerResponse) => void {
  const log = rootLog.child({ module: 'admission' });
  const limit = deps.maxReviewBytes ?? MAX_REVIEW_BYTES;
  const counted = (result: AdmissionResult): void => metrics.admissionReviews.inc({ result });
  const site: ThrowSite = {
    log,
    fields: (req) => ({ method: req.method, path: ADMISSION_PATH }),
    answered: () => counted('error'),
  };
  const malformed = (req: IncomingMessage, res: ServerResponse, code: FailureCode, message: string, uid: string | undefined): void => {
    refuse(req, res, code, message, uid);
    counted('malformed');
  };
  const tooLarge = (declared: string | undefined): BodyFailure => ({
    ok: false,
    code: 'too_large',
    message: `the review is ${declared === undefined ? 'larger than' : `${declared} bytes; more than`} the limit of ${limit} bytes`,
  });

  /** Lint findings never decide: one that throws (a bug) is logged, and the object is admitted without warnings. */
  function warningsOf(object: ReviewedObject): string[] {
    if (!deps.warningsFor) return [];
    try {
      return boundWarnings(deps.warningsFor(object, withIncoming(deps.objectsOf(object.namespace), object)));
    } catch (err) {
      log.error({ err, kind: object.kind, namespace: object.namespace, name: object.name }, 'Failed to compute admission warnings');
      return [];
    }
  }

  function answer(res: ServerResponse, review: Review): void {
    const verdict = verdictOf(review);
    const where = { uid: review.uid, operation: review.operation, kind: review.kind, namespace: review.namespace, name: review.name };
    if (!verdict.allowed)
      log.info({ ...where, reason: verdict.problem.reason, problem: verdict.problem.message }, 'Refused an object at admission');
    const warnings = verdict.allowed && verdict.object ? warningsOf(verdict.object) : [];
    const payload = JSON.stringify(reviewResponse(review.uid, verdict, warnings));
    res.writeHead(200, { ...jsonHeaders(payload), 'Cache-Control': 'no-store' });
    res.end(payload);
    counted(verdict.allowed ? 'allowed' : 'denied');
  }

  return function admit(req, res) {
    const wrongType = notJson(req);
    if (wrongType) {
      malformed(req, res, wrongType.code, wrongType.message, undefined);
      return;
    }
    collectBody(
      req,
      limit,
      tooLarge,
      guarded(site, req, res, function reviewBody(body: Buffer | BodyFailure) {
        if (!Buffer.isBuffer(body)) {
          malformed(req, res, body.code, body.message, undefined);
          return;
        }
        const parsed = parseBody(body);
        const read = parsed.ok ? readReview(parsed.value) : { ok: false as const, message: parsed.message, uid: undefined };
        if (!read.ok) {
          log.warn({ problem: read.message, uid: read.uid }, 'Answered a malformed admission review');
          malformed(req, res, 'bad_request', read.message, read.uid);
          return;
        }
        answer(res, read.review);
      }),
    );
  };
}
