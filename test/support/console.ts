// A console client for HTTP-level tests: signs in with a key, keeps the session cookie, reads the CSRF
// token from the pages it gets, and posts forms from the console's own origin (as a browser would).
import { readFile } from 'node:fs/promises';
import type { TestService } from './service.ts';

export interface ConsoleResponse {
  readonly status: number;
  readonly text: string;
  readonly headers: Headers;
}

export interface ConsoleClient {
  /** http://127.0.0.1:<port> */
  readonly origin: string;
  /** The session's Cookie header. */
  readonly cookie: string;
  get(path: string): Promise<ConsoleResponse>;
  /** Posts a form with the session's CSRF token (unless `_csrf` is given) from our origin; redirects not followed. */
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<ConsoleResponse>;
}

/** The console's origin of a test service. */
export function consoleOrigin(t: TestService): string {
  const url = t.service.console.url;
  if (url === undefined) throw new Error('the test service has no console (--console-listen is empty)');
  return new URL(url.replace('localhost', '127.0.0.1')).origin;
}

export async function adminKey(t: TestService): Promise<string> {
  return (await readFile(t.service.console.adminKeyFile, 'utf8')).trim();
}

async function read(r: Response): Promise<ConsoleResponse> {
  return { status: r.status, text: await r.text(), headers: r.headers };
}

/** Signs in with `key` to the test service's console; throws when the console does not accept it. */
export function signIn(t: TestService, key: string): Promise<ConsoleClient> {
  return signInAt(consoleOrigin(t), key);
}

/** Signs in with `key` to the console at `origin` (http://127.0.0.1:<port>). */
export async function signInAt(origin: string, key: string): Promise<ConsoleClient> {
  const r = await fetch(`${origin}/console/signin`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin },
    body: new URLSearchParams({ key }).toString(),
    redirect: 'manual',
  });
  const cookie = r.headers.get('set-cookie')?.split(';')[0];
  if (r.status !== 303 || cookie === undefined) throw new Error(`sign-in refused: ${r.status} ${await r.text()}`);
  let csrf = '';
  const client: ConsoleClient = {
    origin,
    cookie,
    async get(path) {
      const res = await read(await fetch(`${origin}${path}`, { headers: { Cookie: cookie }, redirect: 'manual' }));
      csrf = /name="_csrf" value="([^"]+)"/.exec(res.text)?.[1] ?? csrf;
      return res;
    },
    async post(path, form, headers = {}) {
      if (csrf === '') await client.get('/console/');
      const body = new URLSearchParams({ _csrf: csrf, ...form }).toString();
      const r2 = await fetch(`${origin}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin, Cookie: cookie, ...headers },
        body,
        redirect: 'manual',
      });
      return read(r2);
    },
  };
  return client;
}

/** A session's live-update stream (GET /console/events), as a page's script reads it. */
export interface LiveStream {
  /** `change` events received so far. */
  changes(): number;
  /** Resolves once `count` change events have arrived; fails after `timeoutMs` saying `what` did not come. */
  changesReach(count: number, what: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Opens the live stream of a signed-in client and counts its `change` events. */
export async function openLive(client: ConsoleClient): Promise<LiveStream> {
  const abort = new AbortController();
  const r = await fetch(`${client.origin}/console/events`, { headers: { Cookie: client.cookie }, signal: abort.signal });
  if (r.status !== 200 || r.body === null) throw new Error(`the live stream answered ${r.status}`);
  let changes = 0;
  let text = '';
  const waiters = new Set<() => void>();
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of r.body as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      // Events end with a blank line; count the whole ones.
      const events = text.split('\n\n');
      text = events.pop() ?? '';
      changes += events.filter((e) => e.startsWith('event: change\n')).length;
      for (const wake of waiters) wake();
    }
  })().catch(() => undefined);
  return {
    changes: () => changes,
    changesReach(count, what, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (changes < count) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no live change for ${what} within ${timeoutMs} ms (${changes} of ${count} arrived)`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close() {
      abort.abort();
      void reading;
    },
  };
}
