// The cluster tier's application: runs in a pod of the tenant's namespace (our image, Node 24 strips
// the types), reaches the operator through its Service as an application would, and counts what
// failed. Two loops over keep-alive connections (Node's fetch): decisions (POST /authorization with
// the tenant's API key, a fixed pace) and bundle polls (GET with the connector token and If-None-Match,
// as an OPA polls). Every second it prints one JSON line of running totals to stdout; the tier reads
// the last one with `kubectl logs`. Nothing is imported but Node: the file is mounted from a ConfigMap.
//
// Environment: ACL_URL (https://acl-operator.acl-system.svc:8443), ACL_TENANT, ACL_CONNECTOR,
// ACL_BUNDLE, API_KEY, CONNECTOR_TOKEN_FILE, DECISIONS_PER_SECOND (default 50), POLLS_PER_SECOND
// (default 5). The CA comes through NODE_EXTRA_CA_CERTS.
import { readFileSync } from 'node:fs';

const env = (name: string, fallback?: string): string => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};
const url = env('ACL_URL');
const tenant = env('ACL_TENANT');
const bundleUrl = `${url}/${tenant}/connectors/policyagent/${env('ACL_CONNECTOR')}/bundles/${env('ACL_BUNDLE')}`;
const apiKey = env('API_KEY');
const tokenFile = env('CONNECTOR_TOKEN_FILE');
const decisionsPerSecond = Number(env('DECISIONS_PER_SECOND', '50'));
const pollsPerSecond = Number(env('POLLS_PER_SECOND', '5'));

interface Counts {
  ok: number;
  failed: number;
  /** What failed, by status code or error, with the time of the last one. */
  failures: Record<string, number>;
  lastFailure?: string;
}
const totals = {
  decisions: { ok: 0, failed: 0, failures: {} } as Counts,
  polls: { ok: 0, failed: 0, failures: {} } as Counts,
  allows: 0,
  notModified: 0,
  etags: [] as string[],
};

function failed(c: Counts, what: string): void {
  c.failed += 1;
  c.failures[what] = (c.failures[what] ?? 0) + 1;
  c.lastFailure = `${new Date().toISOString()} ${what}`;
}

function reason(err: unknown): string {
  const e = err as { cause?: { code?: string; message?: string }; message?: string };
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}

const body = JSON.stringify({
  subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
  action: { name: 'read' },
  resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
});

async function decide(): Promise<void> {
  try {
    const res = await fetch(`${url}/authorization`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    if (res.status !== 200) return failed(totals.decisions, `status ${res.status}`);
    totals.decisions.ok += 1;
    if ((JSON.parse(text) as { decision?: string }).decision === 'allow') totals.allows += 1;
  } catch (err) {
    failed(totals.decisions, reason(err));
  }
}

let etag = '';
async function poll(): Promise<void> {
  try {
    const token = readFileSync(tokenFile, 'utf8').trim();
    const res = await fetch(bundleUrl, {
      headers: { authorization: `Bearer ${token}`, ...(etag ? { 'if-none-match': etag } : {}) },
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    if (res.status === 304) {
      totals.notModified += 1;
    } else if (res.status === 200) {
      etag = res.headers.get('etag') ?? '';
      if (totals.etags.at(-1) !== etag) totals.etags.push(etag);
    } else {
      return failed(totals.polls, `status ${res.status}`);
    }
    totals.polls.ok += 1;
  } catch (err) {
    failed(totals.polls, reason(err));
  }
}

/** Starts `fn` `perSecond` times a second, each call on its own, so a slow answer never slows the pace. */
function paced(perSecond: number, fn: () => Promise<void>): void {
  if (perSecond <= 0) return;
  const start = Date.now();
  let n = 0;
  const tick = () => {
    const due = Math.floor(((Date.now() - start) * perSecond) / 1000);
    for (; n < due; n++) void fn();
    setTimeout(tick, Math.max(1, 1000 / perSecond / 2));
  };
  tick();
}

paced(decisionsPerSecond, decide);
paced(pollsPerSecond, poll);
setInterval(() => process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), ...totals })}\n`), 1000);
process.once('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), final: true, ...totals })}\n`);
  process.exit(0);
});
