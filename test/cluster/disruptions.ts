// Failover and upgrades under load: the application in the tenant keeps deciding and polling through
// the Service, the OPA sidecar keeps long-polling, and a replica goes away in each of the ways a
// cluster takes one: the leader pod deleted, a rollout restart, a new image tag (the docs' upgrade
// commands), a drain's evictions. Each counts failures: exactly 0 is the bar.
import { expect, it } from 'vitest';
import { type LoadCounts, loadCounts, loadProgress, opaErrors, TENANT } from './workload.ts';
import {
  IMAGE_NEXT,
  isReady,
  kubectl,
  kubectlJson,
  leaseHolder,
  OPERATOR_NS,
  OPERATOR_SELECTOR,
  pods,
  readyOperators,
  run,
  runDocsBlock,
  say,
  waitFor,
} from './support.ts';

/** What failed between two readings of the client, and what the sidecar logged as an error meanwhile. */
async function failuresSince(before: LoadCounts, sinceTime: string) {
  // Decisions and polls after the disruption too, not only during it.
  const after = await loadProgress(await loadCounts(), 100);
  return {
    decisions: after.decisions.failed - before.decisions.failed,
    polls: after.polls.failed - before.polls.failed,
    lastFailures: [after.decisions.lastFailure, after.polls.lastFailure].filter(Boolean),
    opaErrors: await opaErrors(sinceTime),
    answered: after.decisions.ok - before.decisions.ok,
  };
}

const NONE = { decisions: 0, polls: 0, opaErrors: [] as string[] };

async function twoReady(): Promise<string[]> {
  return waitFor(
    'two Ready operator pods, none terminating',
    async () => {
      const all = await pods(OPERATOR_NS, OPERATOR_SELECTOR);
      const ready = all.filter(isReady);
      return ready.length === 2 && all.length === 2 && ready.map((p) => p.metadata.name);
    },
    300_000,
  );
}

/** Rules, Connectors and Bundles of the tenant: each Ready for its current generation, the Bundle rolled out. */
async function statusesConsistent(): Promise<void> {
  type Obj = {
    kind: string;
    metadata: { name: string; generation: number };
    status?: { observedGeneration?: number; conditions?: { type: string; status: string; observedGeneration?: number }[] };
  };
  const { items } = await kubectlJson<{ items: Obj[] }>(['-n', TENANT, 'get', 'rules,connectors,bundles']);
  const view = items.map((o) => ({
    object: `${o.kind}/${o.metadata.name}`,
    ready: o.status?.conditions?.find((c) => c.type === 'Ready')?.status,
    current:
      (o.status?.observedGeneration ?? o.status?.conditions?.find((c) => c.type === 'Ready')?.observedGeneration) === o.metadata.generation,
  }));
  expect(view).toEqual(view.map((v) => ({ ...v, ready: 'True', current: true })));
  await kubectl(['-n', TENANT, 'wait', '--for=condition=RolledOut', 'bundle/storefront-policies', '--timeout=180s']);
}

export function disruptionTests(dir: () => string): void {
  it('loses no decision and no bundle poll when the leader pod is deleted; the other replica takes the Lease', async () => {
    const before = await loadCounts();
    const since = new Date().toISOString();
    const leader = await leaseHolder();
    const other = (await readyOperators()).map((p) => p.metadata.name).find((n) => n !== leader);
    expect(other).toBeTruthy();
    const t0 = Date.now();
    await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', leader, '--wait=false']);
    // Whichever replica asks first after the release takes it: the survivor, or the Deployment's
    // replacement for the deleted pod, which is often Ready by then (the preStop pause is 5 s).
    const holder = await waitFor(
      'another replica holding the Lease',
      async () => {
        const h = await leaseHolder();
        return h !== '' && h !== leader && h;
      },
      60_000,
      100,
    );
    const gapMs = Date.now() - t0;
    const names = await twoReady();
    expect(names).toContain(holder);
    say(
      `leader failover: ${leader} deleted, ${holder === other ? 'the other replica' : 'its replacement'} ${holder} held the Lease ${gapMs} ms after the delete (SIGTERM after the 5 s preStop pause, then the Lease released)`,
    );
    const f = await failuresSince(before, since);
    say(`during the failover the application had ${f.answered} decisions answered; failed: ${f.decisions} decisions, ${f.polls} polls`);
    expect({ decisions: f.decisions, polls: f.polls, opaErrors: f.opaErrors }, f.lastFailures.join('; ')).toEqual(NONE);
  });

  it('loses nothing through kubectl rollout restart', async () => {
    const before = await loadCounts();
    const since = new Date().toISOString();
    await kubectl(['-n', OPERATOR_NS, 'rollout', 'restart', 'deploy/acl-operator']);
    await kubectl(['-n', OPERATOR_NS, 'rollout', 'status', 'deploy/acl-operator', '--timeout=300s'], { timeoutMs: 320_000 });
    await twoReady();
    const f = await failuresSince(before, since);
    say(`rollout restart: ${f.answered} decisions answered meanwhile; failed: ${f.decisions} decisions, ${f.polls} polls`);
    expect({ decisions: f.decisions, polls: f.polls, opaErrors: f.opaErrors }, f.lastFailures.join('; ')).toEqual(NONE);
    await statusesConsistent();
  });

  it("loses nothing through the docs' upgrade to a new image tag, and every status stays consistent", async () => {
    const before = await loadCounts();
    const since = new Date().toISOString();
    const r = await runDocsBlock('### Upgrade', dir(), { 'registry.example.com/acl-operator:v0.2.0': IMAGE_NEXT }, 400_000);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const names = await twoReady();
    const running = (await readyOperators()).map((p) => p.spec.containers[0]?.image);
    expect(running).toEqual([IMAGE_NEXT, IMAGE_NEXT]);
    expect(names).toHaveLength(2);
    const f = await failuresSince(before, since);
    say(`upgrade to ${IMAGE_NEXT}: ${f.answered} decisions answered meanwhile; failed: ${f.decisions} decisions, ${f.polls} polls`);
    expect({ decisions: f.decisions, polls: f.polls, opaErrors: f.opaErrors }, f.lastFailures.join('; ')).toEqual(NONE);
    await statusesConsistent();
  });

  it('lets a drain evict one replica but not both (the PodDisruptionBudget), losing nothing', async () => {
    const before = await loadCounts();
    const since = new Date().toISOString();
    const [a, b] = await twoReady();
    const pdbApi = (await kubectl(['api-versions'])).split('\n').includes('policy/v1') ? 'policy/v1' : 'policy/v1beta1';
    await waitFor(
      'the budget allowing one disruption',
      async () => {
        const pdb = await kubectlJson<{ status?: { disruptionsAllowed?: number } }>(['-n', OPERATOR_NS, 'get', 'pdb', 'acl-operator']);
        return pdb.status?.disruptionsAllowed === 1;
      },
      60_000,
    );
    const evict = (pod: string | undefined) =>
      run('kubectl', ['create', '--raw', `/api/v1/namespaces/${OPERATOR_NS}/pods/${pod}/eviction`, '-f', '-'], {
        input: JSON.stringify({ apiVersion: pdbApi, kind: 'Eviction', metadata: { name: pod, namespace: OPERATOR_NS } }),
      });
    const first = await evict(a);
    expect(first.code, first.stderr).toBe(0);
    const second = await evict(b);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toMatch(/disruption budget|TooManyRequests|429/i);
    await twoReady();
    const f = await failuresSince(before, since);
    expect({ decisions: f.decisions, polls: f.polls, opaErrors: f.opaErrors }, f.lastFailures.join('; ')).toEqual(NONE);
  });
}
