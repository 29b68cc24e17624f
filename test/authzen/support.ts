// Shared by the AuthZEN tests: the examples/ folder as manifests (read from disk, so the tests follow
// the examples), and a small client that posts JSON with an API key and keeps the whole answer.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestService } from '../support/service.ts';

export const EXAMPLES_DIR = join(import.meta.dirname, '..', '..', 'examples');

/** The key of tenant "records" (examples/records-api-key.yaml): the certification fixture. */
export const RECORDS_KEY = 'records-example-key-for-local-use-only';
/** The key of tenant "acme" (examples/acme-api-key.yaml). */
export const ACME_KEY = 'acme-example-key-for-local-use-only';

/** Every YAML file of examples/, by file name. */
export async function exampleManifests(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const file of (await readdir(EXAMPLES_DIR)).sort()) {
    if (file.endsWith('.yaml') || file.endsWith('.yml')) out[file] = await readFile(join(EXAMPLES_DIR, file), 'utf8');
  }
  if (Object.keys(out).length === 0) throw new Error(`no manifests in ${EXAMPLES_DIR}`);
  return out;
}

/** An answer read whole: status, headers, the body as text and (when it parses) as JSON. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: unknown;
}

export async function answerOf(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export interface PostOptions {
  /** The API key (default: the client's); null sends no Authorization header. */
  readonly key?: string | null;
  /** Extra headers; a Content-Type here replaces application/json, and undefined removes it. */
  readonly headers?: Record<string, string | undefined>;
  readonly method?: string;
}

export interface Client {
  /** POSTs a value as JSON (a string or Buffer is sent as is; undefined sends no body). */
  post(path: string, body: unknown, options?: PostOptions): Promise<Answer>;
  get(path: string, headers?: Record<string, string>): Promise<Answer>;
}

export function client(t: TestService, defaultKey: string): Client {
  return {
    async post(path, body, options = {}) {
      const key = options.key === undefined ? defaultKey : options.key;
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (key !== null) headers['Authorization'] = `Bearer ${key}`;
      for (const [k, v] of Object.entries(options.headers ?? {})) {
        const existing = Object.keys(headers).find((h) => h.toLowerCase() === k.toLowerCase());
        if (existing !== undefined) delete headers[existing];
        if (v !== undefined) headers[k] = v;
      }
      // Bytes, so that fetch adds no Content-Type of its own (it types a string text/plain).
      const payload =
        body === undefined
          ? undefined
          : Buffer.isBuffer(body)
            ? body
            : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
      return answerOf(await t.api(path, { method: options.method ?? 'POST', headers, body: payload }));
    },
    async get(path, headers = {}) {
      return answerOf(await t.api(path, { headers }));
    },
  };
}

/** Our error body: `{"error":{"status":<status>,"message":"..."}}`; returns the message. */
export function errorMessage(a: Answer, status: number): string {
  const body = a.json as { error?: { status?: unknown; message?: unknown } } | undefined;
  if (a.status !== status || body?.error?.status !== status || typeof body.error.message !== 'string' || Object.keys(body).length !== 1) {
    throw new Error(`expected a ${status} error body, got ${a.status}: ${a.text.slice(0, 300)}`);
  }
  return body.error.message;
}
