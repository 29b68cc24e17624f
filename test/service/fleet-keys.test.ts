// Which key each OPA verifies with, as the service learns it from real HTTP status reports (through
// the uploads thread) and shows it: GET .../bundles/{bundle}/agents lists each agent's key and the
// agents counted by key; the Bundle's status carries KeyRotated beside RolledOut.
import { afterEach, describe, expect, it } from 'vitest';
import { statusReport } from '../support/reports.ts';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

const A = 'acl-aaaaaaaaaaaaaaaa';
const B = 'acl-bbbbbbbbbbbbbbbb';
const PATH = '/acme/connectors/policyagent/gateways';

let t: TestService;
afterEach(async () => {
  await t?.stop();
});

/** A report of OPA 1.1 running revision 1 of docs, with `acl-signing-key` when `kid` is given. */
function labelled(id: string, kid: unknown): Record<string, unknown> {
  const r = statusReport(id, { docs: { revision: '1' } });
  return { ...r, labels: { ...(r['labels'] as object), ...(kid === undefined ? {} : { 'acl-signing-key': kid }) } };
}

async function post(token: string, body: unknown): Promise<number> {
  const res = await t.api(`${PATH}/status`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

interface Listing {
  signingKeys: { kid: string | null; agents: number }[];
  list: { id: string; signingKey: string | null }[];
}
async function agents(): Promise<Listing> {
  const res = await t.api(`${PATH}/bundles/docs/agents`, { headers: { Authorization: `Bearer ${API_KEY}` } });
  return (await res.json()) as Listing;
}

describe('the key each agent verifies with', () => {
  it('is listed per agent and counted by key in GET .../agents, from the acl-signing-key label of each report', async () => {
    t = await startTestService({ manifests: BASE_MANIFESTS, serviceOptions: { agentStatusIntervalMs: 0 } });
    const token = await t.token('acme', 'gateways');
    for (let i = 0; i < 12; i++) expect(await post(token, labelled(`opa-b${String(i).padStart(2, '0')}`, B))).toBe(200);
    for (let i = 0; i < 3; i++) expect(await post(token, labelled(`opa-a${i}`, A))).toBe(200);
    expect(await post(token, labelled('opa-old', undefined))).toBe(200);
    // Not a kid: the report counts, as an agent that names no key.
    expect(await post(token, labelled('opa-odd', 'x'.repeat(500)))).toBe(200);
    const r = await agents();
    expect(r.signingKeys).toEqual([
      { kid: B, agents: 12 },
      { kid: A, agents: 3 },
      { kid: null, agents: 2 },
    ]);
    const byId = Object.fromEntries(r.list.map((a) => [a.id, a.signingKey]));
    expect(byId).toMatchObject({ 'opa-a0': A, 'opa-b11': B, 'opa-old': null, 'opa-odd': null });
    // A restarted sidecar reports the key its new configuration pins.
    expect(await post(token, labelled('opa-a0', B))).toBe(200);
    expect((await agents()).signingKeys[0]).toEqual({ kid: B, agents: 13 });
  });

  it('puts KeyRotated beside RolledOut in the Bundle status', async () => {
    t = await startTestService({ manifests: BASE_MANIFESTS, serviceOptions: { agentStatusIntervalMs: 0 } });
    const status = t.service.state.object('Bundle', 'acme', 'docs')?.status as { conditions?: { type: string }[] } | undefined;
    expect(status?.conditions?.map((c) => c.type)).toEqual(expect.arrayContaining(['RolledOut', 'KeyRotated']));
  });
});
