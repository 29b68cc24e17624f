// The cluster benchmark's fleet part: simulated OPA agents (bench/cluster/agents.ts, in a pod, through
// the Service, the example tenant's connector and bundle) reporting status every 10 s and uploading
// 100 decisions every 10 s each, at several fleet sizes; both replicas' memory after a minute of it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IMAGE, kubectl, kubectlJson, ROOT, run, waitFor } from '../../test/cluster/support.ts';
import { restartsAndKills, TENANT } from '../../test/cluster/workload.ts';
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
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'acl-agents', namespace: TENANT },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'agents',
          image: IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '/agents/agents.ts'],
          env: [
            { name: 'ACL_URL', value: `https://acl-operator.acl-system.svc:8443/${TENANT}/connectors/policyagent/storefront` },
            { name: 'BUNDLE', value: 'storefront-policies' },
            { name: 'REVISION', value: String(bundle.status?.revision ?? 1) },
            { name: 'TOKEN_FILE', value: '/var/run/acl-operator/token' },
            { name: 'STATUS_TEMPLATE', value: '/agents/status.json' },
            { name: 'AGENTS', value: String(agents) },
            { name: 'NODE_EXTRA_CA_CERTS', value: '/var/run/acl-operator/ca.crt' },
          ],
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          volumeMounts: [
            { name: 'agents', mountPath: '/agents', readOnly: true },
            { name: 'token', mountPath: '/var/run/acl-operator', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'agents', configMap: { name: 'acl-agents' } },
        { name: 'token', secret: { secretName: 'storefront-token' } },
      ],
    },
  };
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
