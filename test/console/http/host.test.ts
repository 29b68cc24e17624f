// A Host header the console cannot read (docs/console.md, "Troubleshooting"): the console cannot tell
// which origin a request is for, so it answers 400 saying so, on every route and method, and logs no
// error. Sent over a raw socket: fetch would not send these Host headers, nor leave Host out.
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleOrigin } from '../../support/console.ts';
import { startTestService, type TestService } from '../../support/service.ts';

const lines: { level: number; msg: string }[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
    done();
  },
});

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ serviceOptions: { log: pino({ level: 'info' }, capture) } });
});
afterAll(() => t.stop());

/** Sends `head` (request line and headers, without the blank line) and `body` as they are; the status and text of the answer. */
function raw(head: string, body = ''): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(consoleOrigin(t));
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3}) /.exec(text)?.[1]), text });
    });
    socket.end(`${head}\r\n\r\n${body}`);
  });
}

function requests(host: string | undefined): { name: string; head: string; body: string }[] {
  const hostLine = host === undefined ? [] : [`Host: ${host}`];
  const body = 'key=not-a-key-at-all-0123456789';
  const post = (path: string, version: string) => ({
    name: `POST ${path}`,
    head: [
      `POST ${path} HTTP/${version}`,
      ...hostLine,
      `Origin: ${consoleOrigin(t)}`,
      'Content-Type: application/x-www-form-urlencoded',
      `Content-Length: ${body.length}`,
      'Connection: close',
    ].join('\r\n'),
    body,
  });
  const get = (path: string, version: string) => ({
    name: `GET ${path}`,
    head: [`GET ${path} HTTP/${version}`, ...hostLine, 'Connection: close'].join('\r\n'),
    body: '',
  });
  // HTTP/1.1 without Host is refused by Node itself (400); HTTP/1.0 lets it through to the console.
  const version = host === undefined ? '1.0' : '1.1';
  return [
    get('/console/signin', version),
    get('/console/', version),
    get('/console/t/acme', version),
    get('/', version),
    post('/console/signin', version),
    post('/console/signout', version),
    post('/console/t/acme/connectors/backends/deactivate', version),
  ];
}

describe('a Host header the console cannot read', () => {
  for (const host of ['a b', '[::1', 'exa mple:1', '%', 'a@b', 'a/b', '127.0.0.1:99999', '', undefined]) {
    it(`answers 400 on every route for ${host === undefined ? 'no Host at all' : `Host ${JSON.stringify(host)}`}, and logs no error`, async () => {
      const before = lines.length;
      for (const r of requests(host)) {
        const answer = await raw(r.head, r.body);
        expect(answer.status, r.name).toBe(400);
        expect(answer.text, r.name).toContain('The Host header');
      }
      expect(lines.slice(before).filter((l) => l.level >= 50)).toEqual([]);
    });
  }

  it('still answers a request whose Host is the console’s own', async () => {
    const { host } = new URL(consoleOrigin(t));
    expect((await raw(`GET /console/signin HTTP/1.1\r\nHost: ${host}\r\nConnection: close`)).status).toBe(200);
    expect((await raw(`GET /console/signin HTTP/1.1\r\nHost: LOCALHOST:1\r\nConnection: close`)).status).toBe(200);
  });
});
