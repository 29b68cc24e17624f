import { createServer, type IncomingMessage, request as httpRequest, Agent as HttpAgent, type Server } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../tls/index.ts';
import { type Drainer, trackConnections } from './drain.ts';

const open: Server[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.closeAllConnections();
});

function answer(_req: IncomingMessage, res: import('node:http').ServerResponse): void {
  res.end('ok');
}

async function listening(server: Server): Promise<{ port: number; drainer: Drainer }> {
  const drainer = trackConnections(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push(server);
  return { port: (server.address() as AddressInfo).port, drainer };
}

const GET = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';

/** Raw HTTP/1.1 on one connection: every answer's head, and whether the server closed it. */
function rawClient(port: number) {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    text += d;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  return {
    socket,
    closed,
    answers: () => text.split('HTTP/1.1 ').slice(1),
    async waitForAnswers(n: number) {
      while (this.answers().length < n || !text.endsWith('ok')) {
        await new Promise((resolve) => socket.once('data', resolve));
      }
    },
  };
}

describe('draining a listener', () => {
  it('answers a request sent on a keep-alive connection at the instant draining starts, with Connection: close', async () => {
    const { port, drainer } = await listening(createServer(answer));
    const client = rawClient(port);
    client.socket.write(GET);
    await client.waitForAnswers(1);
    // The connection is idle now. The next request is on the wire when draining starts, in the same
    // turn: http's close() would destroy the connection before reading it, and the request be lost.
    client.socket.write(GET);
    const drained = drainer.drain({ idleMs: 1_000, forceAfterMs: 10_000 });
    await client.closed;
    await drained;
    const answers = client.answers();
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatch(/^200 /);
    expect(answers[0]).toMatch(/Connection: keep-alive/i);
    expect(answers[1]).toMatch(/^200 /);
    expect(answers[1]).toMatch(/Connection: close/i);
  });

  it('ends a connection once it has been idle for idleMs, refuses new ones, and resolves when none is left', async () => {
    const { port, drainer } = await listening(createServer(answer));
    const client = rawClient(port);
    client.socket.write(GET);
    await client.waitForAnswers(1);
    let ended = false;
    client.socket.once('end', () => {
      ended = true;
      client.socket.end();
    });
    await drainer.drain({ idleMs: 20, forceAfterMs: 10_000 });
    expect(ended).toBe(true);
    expect(drainer.draining()).toBe(true);
    const refused = await new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => resolve('connected'));
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('tracks every response of a connection with one shared close listener, not a closure per request', async () => {
    // Tracking runs on every decision; a closure and a once-wrapper per response were garbage made per request.
    const seen: unknown[] = [];
    const server = createServer((_req, res) => {
      seen.push(...res.listeners('close'));
      res.end('ok');
    });
    const { port } = await listening(server);
    const client = rawClient(port);
    for (let i = 1; i <= 3; i++) {
      client.socket.write(GET);
      await client.waitForAnswers(i);
    }
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(1);
    client.socket.destroy();
  });

  it('cuts a request that never finishes at forceAfterMs', async () => {
    const server = createServer(() => undefined); // never answers
    const { port, drainer } = await listening(server);
    const client = rawClient(port);
    client.socket.write(GET);
    await new Promise<void>((resolve) => server.once('request', () => resolve()));
    await drainer.drain({ idleMs: 10, forceAfterMs: 50 });
    await client.closed;
    expect(client.answers()).toHaveLength(0);
  });

  it('loses no request of clients that keep sending on keep-alive connections across the drain (HTTP and HTTPS)', async () => {
    const pair = await selfSignedCertificate({
      commonName: 'localhost',
      organization: 't',
      dnsNames: ['localhost'],
      ips: ['127.0.0.1'],
      now: new Date(),
    });
    for (const tls of [false, true]) {
      const server = tls ? createHttpsServer({ cert: pair.cert, key: pair.private }, answer) : createServer(answer);
      const { port, drainer } = await listening(server as Server);
      // One connection per client, kept alive: a new connection after the drain started would, in a
      // cluster, reach another replica; here it would be refused, which is not what is tested.
      const agentFor = () =>
        tls ? new HttpsAgent({ keepAlive: true, maxSockets: 1, ca: pair.cert }) : new HttpAgent({ keepAlive: true, maxSockets: 1 });
      const send = (agent: HttpAgent) =>
        new Promise<{ close: boolean }>((resolve, reject) => {
          const req = (tls ? httpsRequest : httpRequest)({ host: '127.0.0.1', servername: 'localhost', port, path: '/', agent }, (res) => {
            res.resume();
            res.once('end', () => resolve({ close: res.headers.connection === 'close' }));
          });
          req.once('error', reject);
          req.end();
        });
      const failed: string[] = [];
      let answered = 0;
      let closedAnswers = 0;
      let started = 0;
      // 16 clients, each sending until an answer tells it to go (to another replica, in a cluster).
      const clients = Array.from({ length: 16 }, async () => {
        const agent = agentFor();
        for (;;) {
          try {
            const r = await send(agent);
            answered += 1;
            if (r.close) {
              closedAnswers += 1;
              agent.destroy();
              return;
            }
          } catch (e) {
            failed.push((e as NodeJS.ErrnoException).code ?? String(e));
            agent.destroy();
            return;
          }
          started += 1;
          if (started === 400) void drainer.drain({ idleMs: 1_000, forceAfterMs: 10_000 });
        }
      });
      await Promise.all(clients);
      expect({ tls, failed }).toEqual({ tls, failed: [] });
      expect(answered).toBeGreaterThan(400);
      expect(closedAnswers).toBe(16);
    }
  });
});
