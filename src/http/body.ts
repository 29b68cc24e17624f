// Lean request body handling for JSON endpoints: Content-Type check, a byte limit enforced before
// and while reading, strict UTF-8, and JSON parsed with exact numbers (policy/json.ts).
import type { IncomingMessage } from 'node:http';
import { parseExactJson } from '../policy/index.ts';

export type BodyResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly code: 'bad_request' | 'too_large'; readonly message: string };

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json[ \t]*(?:;|$)/i;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Reads and parses a JSON body of at most `limitBytes` bytes, then calls `done` once (synchronously
 * from the request's last event: no promise or extra tick on the decision path).
 */
export function readJsonBody(req: IncomingMessage, limitBytes: number, done: (result: BodyResult) => void): void {
  const type = req.headers['content-type'];
  if (type === undefined || !JSON_TYPE.test(type)) {
    req.resume();
    done({ ok: false, code: 'bad_request', message: `Content-Type must be application/json, got ${type === undefined ? 'none' : JSON.stringify(type.slice(0, 100))}` });
    return;
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
    done({ ok: false, code: 'too_large', message: `the body is ${declared} bytes; the limit is ${limitBytes}` });
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (result: BodyResult): void => { if (!finished) { finished = true; done(result); } };
  req.on('data', (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > limitBytes) {
      finish({ ok: false, code: 'too_large', message: `the body is larger than the limit of ${limitBytes} bytes` });
      return;
    }
    chunks.push(chunk);
  });
  req.on('error', () => finish({ ok: false, code: 'bad_request', message: 'the request body could not be read' }));
  req.on('end', () => {
    if (finished) return;
    const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
    if (size === 0) { finish({ ok: false, code: 'bad_request', message: 'the body is empty; expected a JSON object' }); return; }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      finish({ ok: false, code: 'bad_request', message: 'the body is not valid UTF-8' });
      return;
    }
    const parsed = parseExactJson(text);
    finish(parsed.ok ? { ok: true, value: parsed.value } : { ok: false, code: 'bad_request', message: parsed.message });
  });
}
