// The cluster benchmark's fleet part: simulated OPA agents (bench/cluster/agents.ts, in a pod, through
// the Service, the example tenant's connector and bundle) reporting status every 10 s and uploading
// 100 decisions every 10 s each, at several fleet sizes; both replicas' memory after a minute of it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kubectl, kubectlJson, ROOT, run, waitFor } from '../../test/cluster/support.ts';
import { restartsAndKills, scriptPod, TENANT, TOKEN_DIR } from '../../test/cluster/workload.ts';
import { type Reading, readMemory } from './memory.ts';

export interface FleetRow extends Reading {
  readonly agents: number;
  readonly decisionsPerSecond: number;
  readonly answered: number;
  readonly failed: number;
  readonly restarts: number;
}

interface Totals {
  status: { ok: number; failed: number };
  logs: { ok: number; failed: number };
}

async function totals(): Promise<Totals | undefined> {
  const r = await run('kubectl', ['-n', TENANT, 'logs', 'acl-agents', '--tail=1']);
  const line = r.stdout.trim().split('\n').at(-1);
  return line ? (JSON.parse(line) as Totals) : undefined;
}

/** Runs `agents` simulated OPAs for `seconds`, then reads memory while they still report. */
export async function fleetMemory(agents: number, seconds: number): Promise<FleetRow> {
  const files = {
    'agents.ts': readFileSync(join(ROOT, 'bench', 'cluster', 'agents.ts'), 'utf8'),
    'status.json': readFileSync(join(ROOT, 'test', 'fixtures', 'opa', 'status-1.1-ok.json'), 'utf8'),
  };
  const bundle = await kubectlJson<{ status?: { revision?: number } }>(['-n', TENANT, 'get', 'bundle', 'storefront-policies']);
  const pod = scriptPod({
    name: 'acl-agents',
    script: 'agents.ts',
    once: true,
    env: [
      { name: 'ACL_URL', value: `https://acl-operator.acl-system.svc:8443/${TENANT}/connectors/policyagent/storefront` },
      { name: 'BUNDLE', value: 'storefront-policies' },
      { name: 'REVISION', value: String(bundle.status?.revision ?? 1) },
      { name: 'TOKEN_FILE', value: `${TOKEN_DIR}/token` },
      { name: 'STATUS_TEMPLATE', value: '/script/status.json' },
      { name: 'AGENTS', value: String(agents) },
    ],
  });
  await kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'acl-agents', namespace: TENANT }, data: files }, pod],
    }),
  });
  await waitFor('the agents reporting', async () => ((await totals())?.status.ok ?? 0) > 0, 120_000);
  const start = await totals();
  const memory = await readMemory(seconds * 1000);
  const end = await totals();
  await kubectl(['-n', TENANT, 'delete', 'pod', 'acl-agents', '--wait=true']);
  const count = (t: Totals | undefined) => ({
    ok: (t?.status.ok ?? 0) + (t?.logs.ok ?? 0),
    failed: (t?.status.failed ?? 0) + (t?.logs.failed ?? 0),
  });
  const { restarts, oomKilled } = await restartsAndKills();
  return {
    agents,
    decisionsPerSecond: (agents * 100) / 10,
    answered: count(end).ok - count(start).ok,
    failed: count(end).failed - count(start).failed,
    restarts: restarts + oomKilled,
    ...memory,
  };
}
