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
