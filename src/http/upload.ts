// Bodies OPA uploads: a status report (JSON) or a decision-log batch (JSON, gzip-compressed), read
// as bytes only. The limit holds for the bytes received here; inflating, scanning and parsing them
// happen in the uploads thread (fleet/intake.ts), where the limit holds again for the inflated bytes.
import type { IncomingMessage } from 'node:http';
import { collectBody, notJson, type BodyFailure } from './body.ts';
import type { UploadTicket } from './gate.ts';

/** An upload's bytes as received, and whether they are gzip. */
export type UploadBytes = { readonly ok: true; readonly bytes: Uint8Array; readonly gzip: boolean } | BodyFailure;

const HELD_TOO_MUCH: BodyFailure = { ok: false, code: 'unavailable', message: 'too many uploads are being received: retry later' };

/**
 * Reads an upload of at most `limitBytes`, its bytes counted on `ticket` as they arrive, then calls
 * `done` once with its bytes (in a buffer of their own, to be moved to the uploads thread) or the
 * 400/413/503 to answer.
 */
export function readUpload(req: IncomingMessage, limitBytes: number, ticket: UploadTicket, done: (result: UploadBytes) => void): void {
  const wrongType = notJson(req);
  if (wrongType) {
    done(wrongType);
    return;
  }
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'gzip' && encoding !== 'identity') {
    req.resume();
    done({
      ok: false,
      code: 'bad_request',
      message: `Content-Encoding must be gzip or identity, got ${JSON.stringify(encoding.slice(0, 100))}`,
    });
    return;
  }
  collectBody(
    req,
    limitBytes,
    (declared) => ({
      ok: false,
      code: 'too_large',
      message: `the ${declared === undefined ? 'body' : `body (${declared} bytes)`} is larger than the limit of ${limitBytes} bytes (--max-upload-bytes)`,
    }),
    (bytes) => {
      if (!Buffer.isBuffer(bytes)) done(bytes);
      else done({ ok: true, bytes: new Uint8Array(bytes), gzip: encoding === 'gzip' });
    },
    (size) => (ticket.hold(size) ? undefined : HELD_TOO_MUCH),
  );
}
