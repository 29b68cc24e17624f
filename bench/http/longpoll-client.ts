// The long-poll client child: thousands of bundle requests held open at once, as a fleet of OPAs
// with `Prefer: wait=N` would hold them. Plain sockets, one request each, so the client stays small
// and records the moment each answer's status line arrives.
import { connect, type Socket } from 'node:net';
import { serveCommands } from './ipc.ts';
import { epochMs } from './servers/stats.ts';

export interface OpenSpec {
  readonly port: number;
  readonly path: string;
  readonly token: string;
  readonly etag: string;
  readonly count: number;
  readonly waitS: number;
}

export interface Answers {
  readonly answered: number;
  /** Answers by status code. */
  readonly statusCodes: Readonly<Record<string, number>>;
  readonly errors: number;
  /** Epoch ms of the first and last 200. */
  readonly first200Ms: number;
  readonly last200Ms: number;
}

export type LongPollCommands = {
  /**
   * Opens `count` more held requests. "Connected" means the handshake is done, not that the server
   * accepted the socket, so the caller sends batches no larger than the server's listen backlog.
   */
  open: { arg: OpenSpec; result: { opened: number } };
  answers: { arg: null; result: Answers };
  /** Closes every socket and forgets the answers. */
  close: { arg: null; result: null };
};

const sockets: Socket[] = [];
const statusCodes: Record<string, number> = {};
let answered = 0;
let errors = 0;
let first200Ms = 0;
let last200Ms = 0;

function hold(spec: OpenSpec, request: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(spec.port, '127.0.0.1');
    sockets.push(socket);
    let seen = false;
    socket.once('connect', () => {
      socket.write(request);
      resolve();
    });
    socket.on('data', (chunk: Buffer) => {
      if (seen) return;
      seen = true;
      const status = chunk.toString('latin1', 9, 12); // "HTTP/1.1 200 OK"
      if (status === '200') {
        const now = epochMs();
        if (first200Ms === 0) first200Ms = now;
        last200Ms = now;
      }
      statusCodes[status] = (statusCodes[status] ?? 0) + 1;
      answered++;
    });
    socket.on('error', () => {
      errors++;
      resolve();
    });
  });
}

serveCommands<LongPollCommands>(
  {
    async open(spec) {
      const request =
        `GET ${spec.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${spec.token}\r\n` +
        `If-None-Match: ${spec.etag}\r\nPrefer: wait=${spec.waitS}\r\nUser-Agent: bench-longpoll\r\n\r\n`;
      const before = sockets.length - errors;
      await Promise.all(Array.from({ length: spec.count }, () => hold(spec, request)));
      return { opened: sockets.length - errors - before };
    },
    answers: () => ({ answered, statusCodes: { ...statusCodes }, errors, first200Ms, last200Ms }),
    close() {
      for (const s of sockets) s.destroy();
      sockets.length = 0;
      answered = errors = first200Ms = last200Ms = 0;
      for (const code of Object.keys(statusCodes)) delete statusCodes[code];
      return null;
    },
  },
  { pid: process.pid },
);
