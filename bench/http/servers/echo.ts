// The baseline: raw node:http that reads the JSON body, parses it and answers a small JSON object.
// It does what every JSON endpoint must do and nothing else, so the service's ratio to it is the
// cost of its own work (auth, validation, decision, metrics) on the same runtime.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveCommands } from '../ipc.ts';
import { startProfile, stopProfile } from './profiler.ts';
import { collectGarbage, processStats, type ServerCommands } from './stats.ts';

export interface EchoReady {
  readonly port: number;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { action?: unknown };
    const payload = JSON.stringify({ decision: 'allow', action: typeof body.action === 'string' ? body.action : null });
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(payload) });
    res.end(payload);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const ready: EchoReady = { port: (server.address() as AddressInfo).port };
  serveCommands<ServerCommands>(
    {
      stats: () => processStats(),
      gcStats: () => {
        collectGarbage();
        return processStats();
      },
      startProfile,
      stopProfile,
    },
    ready,
    () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
});
