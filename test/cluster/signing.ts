// Signed bundles in real pods: the storefront's OPA sidecar runs the configuration the operator
// publishes (ConfigMap acl-opa), pinned to the key of Secret acl-signing-key, and the key rotates the
// way docs/opa.md's runbook says, by editing Kubernetes objects alone, with the sidecar deciding
// throughout and no verification error in its log.
import { expect, it } from 'vitest';
import { kubectlJson, OPERATOR_NS, runDocsBlock, say, waitFor } from './support.ts';
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

  it('rotates the signing key with the commands of docs/kubernetes.md, the sidecar deciding throughout', async () => {
    const sinceTime = new Date().toISOString();
    const old = (await secret()).metadata.annotations?.['acl.policyagent.dev/key-id'] ?? '';
    const answers: boolean[] = [];
    const ask = async () => {
      answers.push((await askSidecar({ ...WRITE, action: 'read' })) === true);
    };
    await ask();
    // The runbook verbatim: annotate the Secret, wait until every Bundle is signed by the new key,
    // restart the sidecars, wait for KeyRotated. The sidecar is asked all along.
    const runbook = runDocsBlock('### The signing key and the ConfigMap acl-opa', process.cwd(), {}, 900_000);
    let done = false;
    void runbook.finally(() => {
      done = true;
    });
    while (!done) await ask();
    const r = await runbook;
    const b = await bundle();
    expect(r.code, `${r.stdout}\n${r.stderr}\nKeyRotated: ${JSON.stringify(condition(b, 'KeyRotated'))}`).toBe(0);
    const next = (await secret()).metadata.annotations?.['acl.policyagent.dev/key-id'] ?? '';
    expect(next).not.toBe(old);
    expect(b.status?.signingKey).toBe(next);
    expect(await publishedConfig()).toContain(`keyid: ${next}`);
    // Retired once every agent verifies with the new key, and not before the operator has heard status
    // reports for a whole agent window (300 s) since it started: an empty fleet after a start is not a moved one.
    await waitFor('the old key retired', async () => (await secret()).data?.['previous.key'] === undefined, 420_000, 2_000);
    await ask();
    say(`key rotation ${old} -> ${next}: ${answers.length} sidecar decisions asked meanwhile, ${answers.filter((a) => !a).length} wrong`);
    expect(answers.every(Boolean)).toBe(true);
    const errors = await opaErrors(sinceTime);
    expect(errors.filter((l) => /verif|signature|digest/i.test(l))).toEqual([]);
  }, 1_500_000);
}
