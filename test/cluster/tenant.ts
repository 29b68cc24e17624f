// The first tenant, as docs/kubernetes.md creates it (deploy/examples/opa-sidecar.yaml: a Rule, a
// Connector, a Bundle and an application with an OPA sidecar), the webhook as the API server calls it
// through the Service, and the application that the failover and upgrade tests keep busy.
import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';
import { isReady, kubectl, kubectlJson, pods, run, runDocsBlock, waitFor } from './support.ts';
import { loadCounts, loadManifest, TENANT } from './workload.ts';

/** One port-forward to a Ready storefront pod's OPA (its REST API is on the pod's loopback), asked once. */
async function askOnce(input: unknown): Promise<unknown> {
  const pod = (await pods(TENANT, 'app.kubernetes.io/name=storefront')).find(isReady);
  if (!pod) throw new Error('no Ready storefront pod');
  const child = spawn('kubectl', ['-n', TENANT, 'port-forward', `pod/${pod.metadata.name}`, ':8181'], {
    env: { ...process.env, KUBECONFIG: process.env['CLUSTER_KUBECONFIG'] ?? '' },
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        const m = /127\.0\.0\.1:(\d+)/.exec(d);
        if (m?.[1]) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`kubectl port-forward to ${pod.metadata.name} exited ${code}: ${stderr.trim()}`)));
    });
    const res = await fetch(`http://127.0.0.1:${port}/v1/data/acl/allow`, { method: 'POST', body: JSON.stringify({ input }) });
    return ((await res.json()) as { result?: unknown }).result;
  } finally {
    child.kill();
  }
}

/**
 * Asks the storefront's OPA sidecar. A port-forward can fail on its own (the kubelet's stream is
 * refused while a pod settles, CI saw one exit 1 right after RolledOut), so the forward is retried for
 * up to 30 s; the error names the pod and kubectl's own message.
 */
export function askSidecar(input: unknown): Promise<unknown> {
  return waitFor('an answer from the storefront sidecar', async () => ({ answer: await askOnce(input) }), 30_000).then((r) => r.answer);
}

export const WRITE = {
  principal: { type: 'user', id: 'alice', team: 'blue' },
  action: 'write',
  resource: { type: 'document', id: 'd1', team: 'blue' },
};

export function tenantTests(dir: () => string): void {
  it('creates the first tenant as the docs do: the Bundle RolledOut on its OPA sidecar, and kubectl get acl filled', async () => {
    const r = await runDocsBlock('**A first tenant.**', dir(), {}, 300_000);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/condition met/);
    const table = await kubectl(['get', 'acl', '-n', TENANT]);
    for (const row of [
      'rule.acl.policyagent.dev/team-documents',
      'connector.acl.policyagent.dev/storefront',
      'bundle.acl.policyagent.dev/storefront-policies',
    ]) {
      expect(table).toContain(row);
    }
    // The dashboard columns are filled: the Bundle's connector, phase, revision, rule count, agents
    // (-o wide adds Rolled-Out).
    const row = (await kubectl(['get', 'bundles', '-n', TENANT, '--no-headers', '-o', 'wide'])).trim().split(/\s+/);
    expect(row.slice(0, 7)).toEqual(['storefront-policies', 'storefront', 'Ready', expect.stringMatching(/^\d+$/), '1', '1/1', 'True']);
    const bundle = await kubectlJson<{ status?: { revision?: number; conditions?: { type: string; status: string }[] } }>([
      '-n',
      TENANT,
      'get',
      'bundle',
      'storefront-policies',
    ]);
    expect(bundle.status?.revision).toBeGreaterThan(0);
    expect(bundle.status?.conditions?.find((c) => c.type === 'RolledOut')?.status).toBe('True');
  });

  it('refuses an invalid Rule at kubectl apply (the API server calls the webhook through the Service) and admits a valid one', async () => {
    const rule = (name: string, condition: string) =>
      `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: ${name}, namespace: ${TENANT}}\nspec: {state: Enforced, subjectType: user, actions: [read], resourceType: report, condition: '${condition}'}\n`;
    const refused = await run('kubectl', ['apply', '-f', '-'], { input: rule('broken', 'principal.team ==') });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/admission webhook .* denied the request/);
    const admitted = await run('kubectl', ['apply', '-f', '-'], { input: rule('reports', 'principal.team == resource.team') });
    expect(admitted.code, admitted.stderr).toBe(0);
    expect((await run('kubectl', ['-n', TENANT, 'get', 'rule', 'broken'])).code).not.toBe(0);
    await kubectl(['-n', TENANT, 'delete', 'rule', 'reports']);
  });

  it("brings a Rule edit to the sidecar's decision", async () => {
    expect(await askSidecar(WRITE)).toBe(false);
    await kubectl(['-n', TENANT, 'patch', 'rule', 'team-documents', '--type=merge', '-p', '{"spec":{"actions":["read","write"]}}']);
    await waitFor('the sidecar allowing write after the edit', async () => (await askSidecar(WRITE)) === true, 120_000);
    await kubectl(['-n', TENANT, 'patch', 'rule', 'team-documents', '--type=merge', '-p', '{"spec":{"actions":["read"]}}']);
    await waitFor('the sidecar denying write again', async () => (await askSidecar(WRITE)) === false, 120_000);
  });

  it('starts an application in the tenant that decides and polls through the Service, with nothing failed', async () => {
    await kubectl(['apply', '-f', '-'], { input: loadManifest() });
    const counts = await waitFor(
      'the load client answering',
      async () => {
        const c = await loadCounts().catch(() => undefined);
        return c && c.decisions.ok > 100 && c.polls.ok > 5 && c;
      },
      180_000,
    );
    expect(counts.decisions.failed).toBe(0);
    expect(counts.polls.failed).toBe(0);
    expect(counts.allows).toBe(counts.decisions.ok);
  });
}
