// The floor of bench/fleet.ts: raw node:http taking the same OPA uploads as the service and doing
// only what any receiver must. `--work read`: read each body and answer; `--work parse`: also
// gunzip it (when sent so) and JSON.parse it, as the service must before it can count a decision.
// The service's cost divided by this one is the cost of its own work (auth, validation, agents,
// counters, recent decisions) on the same runtime, machine and load, measured in the same run.
//   node bench/http/servers/fleet-floor.ts --work read|parse
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { serveCommands } from '../ipc.ts';
import type { FleetCounters, FleetServiceCommands, FleetServiceReady } from './fleet-service.ts';
import { startProfile, stopProfile } from './profiler.ts';
import { collectGarbage, processStats } from './stats.ts';

const { values } = parseArgs({ options: { work: { type: 'string', default: 'parse' } } });
if (values.work !== 'read' && values.work !== 'parse') throw new Error(`--work must be read or parse, got ${values.work}`);
const parse = values.work === 'parse';

let reports = 0;
let uploads = 0;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const logs = (req.url ?? '').endsWith('/logs');
    let accepted = 100;
    if (parse) {
      const body = Buffer.concat(chunks);
      const json: unknown = JSON.parse((req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8'));
      if (logs && Array.isArray(json)) accepted = json.length;
    }
    if (logs) uploads++;
    else reports++;
    const payload = logs ? `{"accepted":${accepted}}` : '{"agent":"floor","bundles":[],"ignored":[]}';
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(payload) });
    res.end(payload);
  });
});
server.keepAliveTimeout = 65_000;

// The same 10 ms resolution as the service's acl_nodejs_eventloop_lag_* gauges.
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();

server.listen(0, '127.0.0.1', () => {
  const ready: FleetServiceReady = {
    port: (server.address() as AddressInfo).port,
    token: 'unused',
    revision: '1',
    decisionLog: undefined,
    serviceLog: undefined,
  };
  serveCommands<FleetServiceCommands>(
    {
      stats: () => processStats(),
      gcStats: () => {
        collectGarbage();
        return processStats();
      },
      startProfile,
      stopProfile,
      counters: (): FleetCounters => ({
        reportsAccepted: reports,
        uploadsAccepted: uploads,
        refused: {},
        decisionLogLines: 0,
        decisionLogDropped: 0,
        agents: { current: 0, behind: 0, failing: 0 },
      }),
      loopDelay: () => {
        const figures = { p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6 };
        delay.reset();
        return figures;
      },
    },
    ready,
    () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
});
