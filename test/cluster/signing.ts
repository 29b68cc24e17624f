// Signed bundles in real pods: the storefront's OPA sidecar runs the configuration the operator
// publishes (ConfigMap acl-opa), pinned to the key of Secret acl-signing-key, and the key rotates the
// way docs/opa.md's runbook says, by editing Kubernetes objects alone, with the sidecar deciding
// throughout and no verification error in its log.
import { expect, it } from 'vitest';
import { kubectl, kubectlJson, OPERATOR_NS, run, say, waitFor } from './support.ts';
import { askSidecar, WRITE } from './tenant.ts';
import { opaErrors, TENANT } from './workload.ts';

const SECRET = 'acl-signing-key';
const BUNDLE = 'storefront-policies';

interface Conditioned {
  metadata: { annotations?: Record<string, string> };
  data?: Record<string, string>;
  status?: { signingKey?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

const secret = () => kubectlJson<Conditioned>(['-n', OPERATOR_NS, 'get', 'secret', SECRET]);
const bundle = () => kubectlJson<Conditioned>(['-n', TENANT, 'get', 'bundle', BUNDLE]);
const condition = (o: Conditioned, type: string) => o.status?.conditions?.find((c) => c.type === type);

/** The OPA configuration the sidecar runs, as the operator published it. */
async function publishedConfig(): Promise<string> {
  const cm = await kubectlJson<{ data?: Record<string, string> }>(['-n', TENANT, 'get', 'configmap', 'acl-opa']);
  return cm.data?.[`${BUNDLE}.yaml`] ?? '';
}

export function signingTests(): void {
  it("signs the storefront's bundle with the key of Secret acl-signing-key, and the sidecar runs the configuration pinned to it", async () => {
    const kid = (await secret()).metadata.annotations?.['acl.policyagent.dev/key-id'];
    expect(kid).toMatch(/^acl-[0-9a-f]{16}$/);
    const b = await waitFor(
      'the Bundle signed and rotated',
      async () => {
        const o = await bundle();
        return o.status?.signingKey === kid && condition(o, 'KeyRotated')?.status === 'True' && o;
      },
      60_000,
    );
    expect(condition(b, 'Signed')).toMatchObject({ status: 'True', reason: 'Signed' });
    const config = await publishedConfig();
    expect(config).toContain(`keyid: ${kid}`);
    expect(config).toContain(`resource: bundles/${BUNDLE}?key=${kid}`);
    expect(await askSidecar({ ...WRITE, action: 'read' })).toBe(true);
  });

  it('rotates the signing key by editing Kubernetes objects alone, the sidecar deciding throughout', async () => {
    const sinceTime = new Date().toISOString();
    const old = (await secret()).metadata.annotations?.['acl.policyagent.dev/key-id'] ?? '';
    const answers: boolean[] = [];
    const ask = async () => {
      answers.push((await askSidecar({ ...WRITE, action: 'read' })) === true);
    };
    await kubectl(['-n', OPERATOR_NS, 'annotate', 'secret', SECRET, `acl.policyagent.dev/rotate=${Date.now()}`, '--overwrite']);
    const next = await waitFor(
      'a new key signing',
      async () => {
        const s = await secret();
        const kid = s.metadata.annotations?.['acl.policyagent.dev/key-id'];
        return kid !== undefined && kid !== old && s.data?.['previous.key'] !== undefined && kid;
      },
      60_000,
    );
    await waitFor(
      'the Bundle rotating',
      async () => {
        const o = await bundle();
        return o.status?.signingKey === next && condition(o, 'KeyRotated')?.status === 'False';
      },
      60_000,
    );
    await ask();
    // The sidecar still pinned to the old key gets the old key's twin of each new revision.
    await kubectl(['-n', TENANT, 'patch', 'rule', 'team-documents', '--type=merge', '-p', '{"spec":{"actions":["read","write"]}}']);
    await waitFor('the sidecar pinned to the old key taking the edit', async () => (await askSidecar(WRITE)) === true, 120_000);
    await kubectl(['-n', TENANT, 'patch', 'rule', 'team-documents', '--type=merge', '-p', '{"spec":{"actions":["read"]}}']);
    await waitFor('the sidecar denying write again', async () => (await askSidecar(WRITE)) === false, 120_000);
    expect(await publishedConfig()).toContain(`keyid: ${next}`);
    // The runbook: restart the sidecars so they take the configuration pinned to the new key, then wait.
    const restart = run('kubectl', ['-n', TENANT, 'rollout', 'restart', 'deployment/storefront']).then(() =>
      run('kubectl', ['-n', TENANT, 'rollout', 'status', 'deployment/storefront', '--timeout=180s']),
    );
    let done = false;
    void restart.finally(() => {
      done = true;
    });
    while (!done) await ask();
    expect((await restart).code).toBe(0);
    const wait = await run('kubectl', ['wait', '--for=condition=KeyRotated', 'bundle', '--all', '-n', TENANT, '--timeout=180s']);
    expect(wait.code, wait.stderr).toBe(0);
    // Retired once every agent verifies with the new key, and not before the operator has heard status
    // reports for a whole agent window (300 s) since it started: an empty fleet after a start is not a moved one.
    await waitFor('the old key retired', async () => (await secret()).data?.['previous.key'] === undefined, 420_000, 2_000);
    await ask();
    say(`key rotation ${old} -> ${next}: ${answers.length} sidecar decisions asked meanwhile, ${answers.filter((a) => !a).length} wrong`);
    expect(answers.every(Boolean)).toBe(true);
    const errors = await opaErrors(sinceTime);
    expect(errors.filter((l) => /verif|signature|digest/i.test(l))).toEqual([]);
  });
}
