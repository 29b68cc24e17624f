// Live updates tell a session only of what it may see (docs/console.md, "Pages"): an acme session's
// stream stays silent while records is busy (its bundle polled, an OPA reporting, decisions uploaded, a
// rule edited), so it cannot learn that another tenant is active; acme's own activity reaches it; the
// admin hears both. Each records step waits until records' own stream has heard it, so the ticks that
// would have told acme have happened before acme's first change is counted.
import { gzipSync } from 'node:zlib';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleManifests } from '../../support/browser.ts';
import { adminKey, type LiveStream, openLive, signIn } from '../../support/console.ts';
import { decisionEvent, statusReport } from '../../support/reports.ts';
import { startTestService, type TestService } from '../../support/service.ts';

const ACME_KEY = 'acme-example-key-for-local-use-only';
const RECORDS_KEY = 'records-example-key-for-local-use-only';

let t: TestService;
const streams: LiveStream[] = [];
beforeAll(async () => {
  t = await startTestService({ manifests: await exampleManifests() });
});
afterAll(async () => {
  for (const s of streams) s.close();
  await t.stop();
});

async function live(key: string): Promise<LiveStream> {
  const stream = await openLive(await signIn(t, key));
  streams.push(stream);
  return stream;
}

/** What one tenant's OPA does, through its connector token, and an edit of one of its rules. */
function activity(tenant: string, connector: string, bundle: string, rulesFile: string) {
  const base = `/${tenant}/connectors/policyagent/${connector}`;
  const post = async (path: string, body: Uint8Array | string, headers: Record<string, string>): Promise<number> => {
    const r = await t.api(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${await t.token(tenant, connector)}`, ...headers },
      body,
    });
    await r.arrayBuffer();
    return r.status;
  };
  return [
    {
      what: 'a bundle poll',
      do: async () => {
        const r = await t.bundle(tenant, connector, bundle, { Authorization: `Bearer ${await t.token(tenant, connector)}` });
        await r.arrayBuffer();
        expect(r.status).toBe(200);
      },
    },
    {
      what: 'a status report',
      do: async () => {
        expect(await post('/status', JSON.stringify(statusReport(`opa-${tenant}`, { [bundle]: { revision: '1' } })), {})).toBe(200);
      },
    },
    {
      what: 'a decision upload',
      do: async () => {
        const events = JSON.stringify([decisionEvent(1, { labels: { id: `opa-${tenant}`, version: '1.1.0' } }, bundle, '1')]);
        expect(await post('/logs', gzipSync(events), { 'Content-Encoding': 'gzip' })).toBeLessThan(300);
      },
    },
    {
      what: 'a rule edit',
      do: async () => {
        const text = await readFile(join(t.manifests, rulesFile), 'utf8');
        await t.write(rulesFile, text.replace(/description: (.*)\n/, 'description: $1 Edited.\n'));
      },
    },
  ];
}

describe('the live stream of a tenant session', () => {
  it("hears nothing of another tenant's activity, and each of its own tenant's", { timeout: 60_000 }, async () => {
    const acme = await live(ACME_KEY);
    const records = await live(RECORDS_KEY);
    const admin = await live(await adminKey(t));

    for (const step of activity('records', 'record-services', 'records', 'records-rules.yaml')) {
      const before = records.changes();
      await step.do();
      await records.changesReach(before + 1, `records' own ${step.what}`);
    }
    await admin.changesReach(1, "records' activity, on the admin's stream");

    let heard = 0;
    for (const step of activity('acme', 'gateways', 'gateway-documents', 'acme-rules.yaml')) {
      await step.do();
      await acme.changesReach(heard + 1, `acme's own ${step.what}`);
      // Nothing of records arrived before acme's first change (a stream keeps its order).
      if (heard === 0) expect(acme.changes(), 'changes on the acme stream after records was busy and acme polled once').toBe(1);
      heard = acme.changes();
    }
  });
});
