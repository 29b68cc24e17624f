// Bodies OPA uploads: a status report (JSON) or a decision-log batch (JSON, gzip-compressed). The
// limit holds for the bytes received and again for the bytes they decompress to, so a small gzip
// bomb is a 413 like a large body; a large body is decompressed on libuv's thread pool, off the
// event loop that answers decisions.
import type { IncomingMessage } from 'node:http';
import { gunzip, gunzipSync } from 'node:zlib';
import { collectBody, notJson, utf8, type BodyFailure, type BodyResult } from './body.ts';

function tooLarge(limitBytes: number, what: string): BodyFailure {
  return { ok: false, code: 'too_large', message: `the ${what} is larger than the limit of ${limitBytes} bytes (--max-upload-bytes)` };
}

/** Compressed bodies up to this size are inflated at once: the thread pool's round trip costs more (bench/fleet.ts)... */
const INFLATE_AT_ONCE_BYTES = 64 * 1024;
/** ...when what they may inflate to is bounded by this too: a bomb stopped at 4 MiB costs a few ms, at 256 MiB far more. */
const INFLATE_AT_ONCE_MAX_OUTPUT = 4 * 1024 * 1024;

export type UploadText = { readonly ok: true; readonly text: string } | BodyFailure;

function decode(bytes: Buffer): UploadText {
  if (bytes.length === 0) return { ok: false, code: 'bad_request', message: 'the body is empty; expected JSON' };
  try {
    return { ok: true, text: utf8.decode(bytes) };
  } catch {
    return { ok: false, code: 'bad_request', message: 'the body is not valid UTF-8' };
  }
}

function inflated(err: Error | null, out: Buffer | undefined, limitBytes: number): UploadText {
  if (err || out === undefined) {
    return (err as NodeJS.ErrnoException | null)?.code === 'ERR_BUFFER_TOO_LARGE'
      ? tooLarge(limitBytes, 'decompressed body')
      : { ok: false, code: 'bad_request', message: `the body is not valid gzip (Content-Encoding: gzip): ${err?.message ?? 'no data'}` };
  }
  return decode(out);
}

/** Parses an upload's text as JSON, or says why it is not. */
export function parseUpload(text: string, parse: (text: string) => unknown = JSON.parse): BodyResult {
  try {
    return { ok: true, value: parse(text) };
  } catch (err) {
    return { ok: false, code: 'bad_request', message: `invalid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * Reads an upload of at most `limitBytes` (received and decompressed), then calls `done` once with
 * its text (UTF-8 checked) or the 400/413 to answer. Each endpoint parses it as it needs: status
 * reports with JSON.parse, decision logs keeping every number exact (fleet/json.ts).
 */
export function readUpload(req: IncomingMessage, limitBytes: number, done: (result: UploadText) => void): void {
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
    (declared) => tooLarge(limitBytes, declared === undefined ? 'body' : `body (${declared} bytes)`),
    (bytes) => {
      if (!Buffer.isBuffer(bytes)) {
        done(bytes);
        return;
      }
      if (encoding === 'identity') {
        done(decode(bytes));
        return;
      }
      if (bytes.length <= INFLATE_AT_ONCE_BYTES && limitBytes <= INFLATE_AT_ONCE_MAX_OUTPUT) {
        // Bounded by maxOutputLength: at worst a few milliseconds for a bomb that stops at the limit.
        let out: Buffer | undefined;
        let error: Error | null = null;
        try {
          out = gunzipSync(bytes, { maxOutputLength: limitBytes });
        } catch (err) {
          error = err instanceof Error ? err : new Error(String(err));
        }
        done(inflated(error, out, limitBytes));
        return;
      }
      gunzip(bytes, { maxOutputLength: limitBytes }, (err, out) => done(inflated(err, out, limitBytes)));
    },
  );
}
