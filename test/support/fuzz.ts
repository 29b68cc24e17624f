// Sends generated malformed requests and judges the answers: raw node:http requests (so bodies and
// header values can carry any byte, and headers can repeat) or raw bytes on a socket (for framing
// the HTTP parser itself must refuse), run with bounded concurrency over keep-alive connections.
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { rng } from './corpus.ts';

/** One generated request and the answers it may get. */
export interface HttpCase {
  /** What was generated, for the failure list. */
  readonly label: string;
  readonly method: string;
  /** Sent as is: the caller percent-encodes (node:http refuses raw non-ASCII in a path). */
  readonly path: string;
  /** In order, repeats allowed; values are written as latin1, so chars 0x80-0xff become those bytes. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: Buffer;
  /** Stream the body with Transfer-Encoding: chunked instead of declaring its length. */
  readonly chunked?: boolean;
  /** Every status this case may be answered with; one element when the status is predictable. */
  readonly expect: readonly number[];
  /** Whether the answer comes from our handlers (a JSON error body) or from the HTTP parser (bare). */
  readonly bare?: boolean;
  /** The X-Request-ID sent (expected back), or true when none or one that is not echoed was sent (expect none back). */
  readonly requestId?: string | true;
  /** Further checks on a successful answer; returns what is wrong. */
  readonly check?: (reply: Reply) => string | undefined;
}

export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Where every case is sent: the API's host and port, over one keep-alive agent. */
export interface Target {
  readonly host: string;
  readonly port: number;
  readonly agent: Agent;
}

/** Longest a single answer may take before it counts as a hang (nothing here may be held). */
const ANSWER_WITHIN_MS = 10_000;

export function target(url: string, maxSockets: number): Target {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port), agent: new Agent({ keepAlive: true, maxSockets }) };
}

/** Sends one case; resolves with the answer, or with what went wrong on the wire. */
export function send(to: Target, c: HttpCase): Promise<Reply | { readonly error: string }> {
  const headers: string[] = ['Host', `${to.host}:${to.port}`];
  for (const [k, v] of c.headers) headers.push(k, v);
  if (c.body !== undefined) {
    if (c.chunked) headers.push('Transfer-Encoding', 'chunked');
    else headers.push('Content-Length', String(c.body.length));
  }
  return new Promise((resolve) => {
    let settled = false;
    const done = (v: Reply | { readonly error: string }): void => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    };
    const req = request({ host: to.host, port: to.port, method: c.method, path: c.path, headers, agent: to.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', (err) => done({ error: `response: ${err.message}` }));
    });
    req.setTimeout(ANSWER_WITHIN_MS, () => req.destroy(new Error(`no answer within ${ANSWER_WITHIN_MS} ms`)));
    // The server may answer (401, 413) and close before the whole body is written; that answer counts.
    req.on('error', (err) => done({ error: `request: ${err.message}` }));
    if (c.body === undefined) {
      req.end();
      return;
    }
    if (c.chunked) {
      // Several chunks, so that a limit is crossed while reading, not only by a declared length.
      const step = Math.max(1, Math.ceil(c.body.length / 4));
      for (let i = 0; i < c.body.length; i += step) req.write(c.body.subarray(i, i + step));
      req.end();
    } else req.end(c.body);
  });
}

/** What is wrong with an answer to a case, or undefined when it is one of the answers allowed. */
export function judge(c: HttpCase, outcome: Reply | { readonly error: string }): string | undefined {
  if ('error' in outcome) return `${outcome.error}, expected ${c.expect.join('|')}`;
  const { status, headers, body } = outcome;
  if (!c.expect.includes(status)) return `answered ${status}, expected ${c.expect.join('|')}: ${body.toString('utf8', 0, 200)}`;
  if (c.requestId !== undefined) {
    const id = headers['x-request-id'];
    // An id reply.ts accepts is echoed; anything else (or none) is never echoed nor invented.
    if (c.requestId === true && id !== undefined)
      return `X-Request-ID ${JSON.stringify(id)} answered to a request that sent none or one that is not echoed`;
    if (c.requestId !== true && id !== c.requestId) return `X-Request-ID ${JSON.stringify(id)} is not the one sent`;
  }
  if (status >= 400 && !c.bare) {
    // RFC 9110 11.6.1 and 15.5.6: a 401 names its scheme, a 405 the methods that would work.
    if (status === 401 && !/^Bearer /.test(headers['www-authenticate'] ?? '')) return 'a 401 without WWW-Authenticate: Bearer';
    if (status === 405 && !headers['allow']) return 'a 405 without Allow';
    const wrong = c.method === 'HEAD' ? undefined : errorBodyProblem(status, headers, body);
    if (wrong) return wrong;
  }
  return status < 400 ? c.check?.(outcome) : undefined;
}

/** Our 4xx bodies are `{"error":{"status":<the status>,"message":"<non-empty>"}}`. */
export function errorBodyProblem(status: number, headers: IncomingHttpHeaders, body: Buffer): string | undefined {
  if (!/^application\/json\b/.test(headers['content-type'] ?? '')) return `a ${status} with Content-Type ${headers['content-type']}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return `a ${status} whose body is not JSON: ${body.toString('utf8', 0, 200)}`;
  }
  const error = (parsed as { error?: { status?: unknown; message?: unknown } } | null)?.error;
  if (error?.status !== status || typeof error.message !== 'string' || error.message === '') {
    return `a ${status} whose body is not {"error":{"status":${status},"message":"…"}}: ${body.toString('utf8', 0, 200)}`;
  }
  return undefined;
}

/** Runs `work` over `items` with at most `limit` in flight; results keep the order of the items. */
export async function pool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Sends every case and lists what went wrong, one line per failing case, in case order. */
export async function barrage(to: Target, cases: readonly HttpCase[], limit: number): Promise<string[]> {
  const outcomes = await pool(cases, limit, (c) => send(to, c));
  return cases.flatMap((c, i) => {
    const wrong = judge(c, outcomes[i] as Reply | { error: string });
    return wrong === undefined ? [] : [`${c.method} ${c.path.slice(0, 120)} [${c.label}]: ${wrong}`];
  });
}

/** One request written as raw bytes on a new connection, and the statuses of every answer. */
export interface RawCase {
  readonly label: string;
  readonly bytes: Buffer;
  /** Allowed statuses of each answer, in order; answers past the list must fit its last entry. */
  readonly expect: readonly (readonly number[])[];
  /** The connection may also be closed without any answer (the client gave up mid-request). */
  readonly mayCloseSilently?: boolean;
}

/** Writes the bytes, half-closes, and reads until the server closes. */
export function sendRaw(to: Target, c: RawCase): Promise<{ statuses: number[]; text: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(to.port, to.host);
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.setTimeout(ANSWER_WITHIN_MS, () => socket.destroy(new Error(`not closed within ${ANSWER_WITHIN_MS} ms`)));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (err) => {
      error = err.message;
    });
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      // A status line cannot hide in our bodies: they are JSON (no raw CR LF) or a tar.gz never asked for here.
      const statuses = [...text.matchAll(/HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/g)].map((m) => Number(m[1]));
      resolve(error === undefined ? { statuses, text } : { statuses, text, error });
    });
    socket.end(c.bytes);
  });
}

export async function rawBarrage(to: Target, cases: readonly RawCase[], limit: number): Promise<string[]> {
  const outcomes = await pool(cases, limit, (c) => sendRaw(to, c));
  return cases.flatMap((c, i) => {
    const { statuses, text, error } = outcomes[i] as { statuses: number[]; text: string; error?: string };
    const wrong = ((): string | undefined => {
      if (statuses.length === 0)
        return c.mayCloseSilently && error === undefined ? undefined : `closed without an answer${error ? ` (${error})` : ''}`;
      for (const [n, status] of statuses.entries()) {
        const allowed = c.expect[Math.min(n, c.expect.length - 1)] ?? [];
        if (!allowed.includes(status))
          return `answer ${n + 1} is ${status}, expected ${allowed.join('|')}: ${JSON.stringify(text.slice(0, 300))}`;
      }
      return undefined;
    })();
    return wrong === undefined ? [] : [`raw [${c.label}]: ${wrong}`];
  });
}

// ---------------------------------------------------------------------------------------------
// Generation helpers

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
export type Header = readonly [string, string];

/** A seeded source of choices (corpus.ts's generator); each generator gets its own, so each is reproducible alone. */
export function chooser(seed: number): { r: () => number; pick: <T>(xs: readonly T[]) => T; int: (below: number) => number } {
  const r = rng(seed);
  return { r, pick: <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T, int: (below) => Math.floor(r() * below) };
}

/**
 * A generator of random JSON, shallow (three levels), from the keys and leaf values that tend to
 * break the endpoint under test: lists, maps of those keys, and the leaves.
 */
export function randomJsonOf(c: ReturnType<typeof chooser>, keys: readonly string[], leaves: readonly Json[]): (depth?: number) => Json {
  const randomJson = (depth = 0): Json => {
    const x = c.r();
    if (depth < 3 && x < 0.15) return Array.from({ length: c.int(4) }, () => randomJson(depth + 1));
    if (depth < 3 && x < 0.3) {
      const o: JsonObject = {};
      for (let i = c.int(4); i > 0; i--) o[c.pick(keys)] = randomJson(depth + 1);
      return o;
    }
    return c.pick(leaves);
  };
  return randomJson;
}

const EDIT_ALPHABET = Buffer.from('{}[]":,\\ \t\n0123456789.eE+-truefalsnul/uabcdé');

/** A body with one to three random byte edits: characters deleted, inserted, replaced or repeated. */
export function editBytes(c: ReturnType<typeof chooser>, body: Buffer): Buffer {
  const { r, int } = c;
  let b = body;
  for (let k = 1 + int(3); k > 0; k--) {
    const at = int(b.length + 1);
    const ch = Buffer.from([r() < 0.1 ? 0x80 + int(128) : (EDIT_ALPHABET[int(EDIT_ALPHABET.length)] as number)]);
    const op = int(4);
    if (op === 0) b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + int(3))]);
    else if (op === 1) b = Buffer.concat([b.subarray(0, at), ch, b.subarray(at)]);
    else if (op === 2) b = Buffer.concat([b.subarray(0, at), ch, b.subarray(at + 1)]);
    else b = Buffer.concat([b.subarray(0, at), b.subarray(at, at + 1 + int(8)), b.subarray(at)]);
  }
  return b;
}

/** Text as UTF-8, byte lists as they are. */
export const bytes = (...parts: (string | Buffer | readonly number[])[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.isBuffer(p) ? p : Buffer.from(p))));

/** Latin-1 text for a header value: node:http writes each char as one byte, so these are raw bytes. */
export const latin1 = (...codes: number[]): string => String.fromCharCode(...codes);

export const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Sets or (with undefined) removes the value at a path of a copy; objects are made on the way. */
export function setAt(doc: Json, path: readonly string[], value: Json | undefined): Json {
  if (path.length === 0) return value === undefined ? {} : value;
  const root = JSON.parse(JSON.stringify(doc)) as Json;
  let cur: Json = root;
  for (const [i, key] of path.entries()) {
    if (!isObject(cur)) return root;
    if (i === path.length - 1) {
      if (value === undefined) delete cur[key];
      else cur[key] = value;
    } else {
      if (!isObject(cur[key])) cur[key] = {};
      cur = cur[key] as Json;
    }
  }
  return root;
}

/** A path segment as sent, and what it decodes to (undefined: malformed percent-encoding). */
export interface Segment {
  readonly raw: string;
  readonly decoded: string | undefined;
}
export const plain = (decoded: string): Segment => ({ raw: encodeURIComponent(decoded), decoded });
export const sent = (raw: string, decoded: string | undefined): Segment => ({ raw, decoded });
/** Every byte percent-encoded, upper or lower case: still the same name. */
export const encoded = (name: string, lower: boolean): Segment => {
  const hex = [...Buffer.from(name, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  return sent(lower ? hex : hex.toUpperCase(), name);
};
