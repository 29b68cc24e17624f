// The cluster benchmark's load client: POST /authorization from `CONNECTIONS` keep-alive connections,
// each sending its next request when the last is answered, for `SECONDS`; prints one JSON line:
// requests answered, failed, req/s, latency percentiles. The same file runs in a pod (mounted from a
// ConfigMap, our image's Node strips the types; nothing but Node is imported) and on the host, so the
// two rows of the benchmark differ only in where the service runs and how it is reached.
//
// Environment: ACL_URL (the base URL), API_KEY, CONNECTIONS (default 16), SECONDS (default 10),
// WARMUP_SECONDS (default 2); the CA through NODE_EXTRA_CA_CERTS.
import { Agent, request } from 'node:https';

const url = new URL(`${process.env['ACL_URL'] ?? ''}/authorization`);
const apiKey = process.env['API_KEY'] ?? '';
const connections = Number(process.env['CONNECTIONS'] ?? 16);
const seconds = Number(process.env['SECONDS'] ?? 10);
const warmup = Number(process.env['WARMUP_SECONDS'] ?? 2);
const agent = new Agent({ keepAlive: true, maxSockets: connections });
const body = Buffer.from(
  JSON.stringify({
    subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
    action: 'read',
    resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
  }),
);
const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': String(body.length) };

function once(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers, agent }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end(body);
  });
}

async function run(ms: number, record: boolean) {
  const latencies: number[] = [];
  let failed = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) {
        const t = process.hrtime.bigint();
        const status = await once().catch(() => 0);
        if (!record) continue;
        if (status === 200) latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
        else failed += 1;
      }
    }),
  );
  return { latencies, failed };
}

await run(warmup * 1000, false);
const started = Date.now();
const { latencies, failed } = await run(seconds * 1000, true);
const elapsed = (Date.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
process.stdout.write(
  `${JSON.stringify({ answered: latencies.length, failed, rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), max: latencies.at(-1) ?? Number.NaN })}\n`,
);
agent.destroy();
