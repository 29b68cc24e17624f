// An upload's bytes to its JSON value, in the uploads thread: inflated within --max-upload-bytes
// and scanned as it is inflated (scan.ts), so a bomb is refused within its first kilobytes rather
// than after megabytes are allocated; then UTF-8 checked and parsed.
import { createGunzip, gunzipSync } from 'node:zlib';
import { parseKeepingNumbers } from './json.ts';
import { BYTES_PER_CONTAINER, createJsonScanner, MAX_UPLOAD_DEPTH, MIN_CONTAINERS, type JsonScanner } from './scan.ts';

/** An expected refusal: 400, 413, 404 (a bundle of another connector), or 503 (the thread could not take it). */
export type UploadFailure = {
  readonly ok: false;
  readonly code: 'bad_request' | 'too_large' | 'not_found' | 'unavailable';
  readonly message: string;
};

/** The bytes as received, and whether they are gzip; `limitBytes` holds again once inflated. */
export interface UploadBody {
  readonly body: Uint8Array;
  readonly gzip: boolean;
  readonly limitBytes: number;
}

/**
 * A gzip whose trailer says it inflates to at most this is inflated in one call (a decision-log
 * batch of OPA's default 32 KiB inflates to a few hundred): a stream costs 50 µs more an upload.
 * Anything larger, or whose trailer does not tell the truth, is inflated as a stream.
 */
const AT_ONCE_BYTES = 512 * 1024;
/** Inflated piece by piece in pieces of this size, each scanned before the next. */
const PIECE_BYTES = 64 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

const tooLarge = (limitBytes: number): UploadFailure => ({
  ok: false,
  code: 'too_large',
  message: `the decompressed body is larger than the limit of ${limitBytes} bytes (--max-upload-bytes)`,
});
const notGzip = (err: unknown): UploadFailure => ({
  ok: false,
  code: 'bad_request',
  message: `the body is not valid gzip (Content-Encoding: gzip): ${err instanceof Error ? err.message : String(err)}`,
});

type Inflated = { readonly ok: true; readonly bytes: Buffer } | UploadFailure;

/** What a gzip's trailer says it inflates to (ISIZE, RFC 1952 2.3.1), when it looks like one. */
function claimedSize(body: Buffer): number | undefined {
  return body.length >= 18 && body[0] === 0x1f && body[1] === 0x8b ? body.readUInt32LE(body.length - 4) : undefined;
}

/** Inflates in one call, at most `maxBytes`; undefined when there is more (a trailer that understated it). */
function inflateAtOnce(body: Buffer, maxBytes: number, limitBytes: number, scanner: JsonScanner): Inflated | undefined {
  let bytes: Buffer;
  try {
    bytes = gunzipSync(body, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') return notGzip(err);
    return maxBytes < limitBytes ? undefined : tooLarge(limitBytes);
  }
  const problem = scanner.push(bytes);
  return problem ? { ok: false, ...problem } : { ok: true, bytes };
}

/** Inflates piece by piece, each scanned: it stops at the first problem. */
function inflateScanned(body: Buffer, limitBytes: number, scanner: JsonScanner): Promise<Inflated> {
  return new Promise((resolve) => {
    const gunzip = createGunzip({ chunkSize: PIECE_BYTES });
    const pieces: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: Inflated): void => {
      if (done) return;
      done = true;
      resolve(result);
      gunzip.destroy();
    };
    gunzip.on('data', (piece: Buffer) => {
      if (done) return;
      size += piece.length;
      if (size > limitBytes) return finish(tooLarge(limitBytes));
      const problem = scanner.push(piece);
      if (problem) return finish({ ok: false, ...problem });
      pieces.push(piece);
    });
    gunzip.on('end', () => finish({ ok: true, bytes: pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces, size) }));
    gunzip.on('error', (err) => finish(notGzip(err)));
    gunzip.end(body);
  });
}

const maxContainers = (limitBytes: number): number => Math.max(MIN_CONTAINERS, Math.floor(limitBytes / BYTES_PER_CONTAINER));
const newScanner = (limitBytes: number): JsonScanner => createJsonScanner(MAX_UPLOAD_DEPTH, maxContainers(limitBytes));

/** The upload's bytes, inflated when gzip, and the scanner that read all of them. */
async function inflated(u: UploadBody): Promise<{ read: Inflated; scanner: JsonScanner }> {
  const body = Buffer.from(u.body.buffer, u.body.byteOffset, u.body.byteLength);
  const scanner = newScanner(u.limitBytes);
  if (!u.gzip) {
    const problem = body.length > 0 ? scanner.push(body) : undefined;
    return { read: problem ? { ok: false, ...problem } : { ok: true, bytes: body }, scanner };
  }
  const claimed = claimedSize(body);
  if (claimed === undefined || claimed <= AT_ONCE_BYTES) {
    const atOnce = inflateAtOnce(body, Math.min(u.limitBytes, AT_ONCE_BYTES), u.limitBytes, scanner);
    if (atOnce !== undefined) return { read: atOnce, scanner };
    // The trailer understated what follows: the scan starts again on the stream.
    const again = newScanner(u.limitBytes);
    return { read: await inflateScanned(body, u.limitBytes, again), scanner: again };
  }
  return { read: await inflateScanned(body, u.limitBytes, scanner), scanner };
}

/**
 * The upload's JSON value: inflated within `limitBytes`, scanned, UTF-8 checked and parsed.
 * `exact`: every number as written; `keptNumbers` then says whether one needed it (the value holds
 * JSON.rawJSON values, which cannot cross a thread as they are).
 */
export async function readUploadJson(
  u: UploadBody,
  exact: boolean,
): Promise<{ readonly ok: true; readonly value: unknown; readonly keptNumbers: boolean } | UploadFailure> {
  const { read, scanner } = await inflated(u);
  if (!read.ok) return read;
  if (read.bytes.length === 0) return { ok: false, code: 'bad_request', message: 'the body is empty; expected JSON' };
  let text: string;
  try {
    text = utf8.decode(read.bytes);
  } catch {
    return { ok: false, code: 'bad_request', message: 'the body is not valid UTF-8' };
  }
  const keptNumbers = exact && scanner.inexact();
  try {
    return { ok: true, value: keptNumbers ? parseKeepingNumbers(text) : JSON.parse(text), keptNumbers };
  } catch (err) {
    return { ok: false, code: 'bad_request', message: `invalid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}
