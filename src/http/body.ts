// Lean request body handling for JSON endpoints: Content-Type check, a byte limit enforced before
// and while reading, strict UTF-8, and JSON parsed with exact numbers (policy/json.ts).
import type { IncomingMessage } from 'node:http';
import { parseExactJson } from '../policy/index.ts';

export type BodyFailure = { readonly ok: false; readonly code: 'bad_request' | 'too_large' | 'unavailable'; readonly message: string };
export type BodyResult = { readonly ok: true; readonly value: unknown } | BodyFailure;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json[ \t]*(?:;|$)/i;
export const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The 400 of a request whose Content-Type is not JSON (the body is drained), or undefined. */
export function notJson(req: IncomingMessage): BodyFailure | undefined {
  const type = req.headers['content-type'];
  if (type !== undefined && JSON_TYPE.test(type)) return undefined;
  req.resume();
  return {
    ok: false,
    code: 'bad_request',
    message: `Content-Type must be application/json, got ${type === undefined ? 'none' : JSON.stringify(type.slice(0, 100))}`,
  };
}

/**
 * Collects a body of at most `limitBytes` (as declared, then as it streams in) and calls `done`
 * once, synchronously from the request's last event, with the bytes or the 400/413.
 * `tooLarge(declared)` words the 413 (`declared`: the Content-Length, when that already tells);
 * `onChunk`, told each chunk's size, may refuse the body (the upload receivers' limit on what they hold).
 */
export function collectBody(
  req: IncomingMessage,
  limitBytes: number,
  tooLarge: (declared: string | undefined) => BodyFailure,
  done: (body: Buffer | BodyFailure) => void,
  onChunk?: (bytes: number) => BodyFailure | undefined,
): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
    done(tooLarge(declared));
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (result: Buffer | BodyFailure): void => {
    if (!finished) {
      finished = true;
      done(result);
    }
  };
  req.on('data', (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > limitBytes) {
      finish(tooLarge(undefined));
      return;
    }
    const refused = onChunk?.(chunk.length);
    if (refused) {
      finish(refused);
      return;
    }
    chunks.push(chunk);
  });
  req.on('error', () => finish({ ok: false, code: 'bad_request', message: 'the request body could not be read' }));
  req.on('end', () => {
    if (!finished) finish(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  });
}

/**
 * Reads and parses a JSON body of at most `limitBytes` bytes, then calls `done` once (synchronously
 * from the request's last event: no promise or extra tick on the decision path).
 */
export function readJsonBody(req: IncomingMessage, limitBytes: number, done: (result: BodyResult) => void): void {
  const wrongType = notJson(req);
  if (wrongType) {
    done(wrongType);
    return;
  }
  collectBody(
    req,
    limitBytes,
    (declared) => ({
      ok: false,
      code: 'too_large',
      message:
        declared === undefined
          ? `the body is larger than the limit of ${limitBytes} bytes`
          : `the body is ${declared} bytes; the limit is ${limitBytes}`,
    }),
    (bytes) => {
      if (!Buffer.isBuffer(bytes)) {
        done(bytes);
        return;
      }
      if (bytes.length === 0) {
        done({ ok: false, code: 'bad_request', message: 'the body is empty; expected a JSON object' });
        return;
      }
      let text: string;
      try {
        text = utf8.decode(bytes);
      } catch {
        done({ ok: false, code: 'bad_request', message: 'the body is not valid UTF-8' });
        return;
      }
      const parsed = parseExactJson(text);
      done(parsed.ok ? { ok: true, value: parsed.value } : { ok: false, code: 'bad_request', message: parsed.message });
    },
  );
}
