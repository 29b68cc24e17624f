// The cluster benchmark's OPA fleet, in a pod: AGENTS simulated OPA agents, each with its own
// keep-alive HTTPS connection through the Service, sending a real OPA 1.1 status report (the fixture,
// 49 KB, with the agent's own id and the tenant's bundle) every PERIOD_S seconds and, when EVENTS > 0,
// a gzip decision-log upload of EVENTS decisions every PERIOD_S seconds, each agent at its own phase.
// Prints a JSON line of running totals every 5 s. Nothing is imported but Node (mounted from a
// ConfigMap; our image's Node strips the types).
//
// Environment: ACL_URL (…/{tenant}/connectors/policyagent/{connector}), BUNDLE, REVISION, TOKEN_FILE,
// STATUS_TEMPLATE (a status report JSON file), AGENTS, PERIOD_S (default 10), EVENTS (default 100).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { gzipSync } from 'node:zlib';

const base = new URL(process.env['ACL_URL'] ?? '');
const bundle = process.env['BUNDLE'] ?? '';
const revision = process.env['REVISION'] ?? '1';
const token = () => readFileSync(process.env['TOKEN_FILE'] ?? '', 'utf8').trim();
const template = JSON.parse(readFileSync(process.env['STATUS_TEMPLATE'] ?? '', 'utf8')) as {
  labels: { id: string };
  bundles: Record<string, Record<string, unknown>>;
};
const agents = Number(process.env['AGENTS'] ?? 100);
const periodMs = Number(process.env['PERIOD_S'] ?? 10) * 1000;
const events = Number(process.env['EVENTS'] ?? 100);

const firstBundle = Object.values(template.bundles)[0] ?? {};
const totals = { status: { ok: 0, failed: 0 }, logs: { ok: 0, failed: 0 }, codes: {} as Record<string, number> };

function post(agent: Agent, path: string, body: Buffer, gzip: boolean, kind: 'status' | 'logs'): void {
  const headers: Record<string, string> = {
    authorization: `Bearer ${token()}`,
    'content-type': 'application/json',
    'content-length': String(body.length),
  };
  if (gzip) headers['content-encoding'] = 'gzip';
  const req = request(
    { hostname: base.hostname, port: base.port, path: `${base.pathname}/${path}`, method: 'POST', headers, agent },
    (res) => {
      res.resume();
      res.once('end', () => {
        const code = String(res.statusCode);
        totals.codes[code] = (totals.codes[code] ?? 0) + 1;
        if (res.statusCode === 200 || res.statusCode === 204) totals[kind].ok += 1;
        else totals[kind].failed += 1;
      });
    },
  );
  req.once('error', () => {
    totals[kind].failed += 1;
  });
  req.end(body);
}

for (let k = 0; k < agents; k++) {
  const id = randomUUID();
  const report = Buffer.from(
    JSON.stringify({
      ...template,
      labels: { ...template.labels, id },
      bundles: { [bundle]: { ...firstBundle, name: bundle, active_revision: revision } },
    }),
  );
  const batch =
    events > 0
      ? gzipSync(
          JSON.stringify(
            Array.from({ length: events }, (_, i) => ({
              labels: { id, version: '1.1.0' },
              decision_id: randomUUID(),
              bundles: { [bundle]: { revision } },
              path: 'acl/allow',
              input: {
                principal: { type: 'user', id: `user-${i}`, team: i % 2 ? 'blue' : 'red' },
                action: 'read',
                resource: { type: 'document', id: `doc-${k}-${i}`, team: 'blue' },
              },
              result: i % 2 === 1,
              requested_by: `10.1.${(k >> 8) & 255}.${k & 255}:${40_000 + i}`,
              timestamp: new Date().toISOString(),
              req_id: i,
            })),
          ),
        )
      : undefined;
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  const phase = Math.floor((k / agents) * periodMs);
  setTimeout(() => {
    const tick = () => {
      post(agent, 'status', report, false, 'status');
      if (batch) post(agent, 'logs', batch, true, 'logs');
    };
    tick();
    setInterval(tick, periodMs);
  }, phase);
}
setInterval(() => process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), agents, ...totals })}\n`), 5_000);
