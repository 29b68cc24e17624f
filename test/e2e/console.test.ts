// The console in Kubernetes mode against the real API server (issue 16): an admin key from a labelled
// Secret signs in; actions patch the objects, so kubectl sees them, and the bundle endpoint answers as
// the action says; a GitOps owner's annotation is named on the page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Operator } from '../../src/modes/index.ts';
import { type ConsoleClient, signInAt } from '../support/console.ts';
import {
  apply,
  apiKeySecret,
  bundleYaml,
  connectorYaml,
  createNamespace,
  customApi,
  E2E_KUBECONFIG,
  ensureCrds,
  fetchBundle,
  loadConfig,
  readToken,
  ruleYaml,
  startE2EOperator,
  TEAM_RULE,
  waitFor,
} from '../support/kube.ts';

const ADMIN_KEY = 'console-admin-key-0123456789abcdef';

function adminSecret(ns: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'console-admin', namespace: ns, labels: { 'acl.policyagent.dev/console-admin': 'true' } },
    data: { token: Buffer.from(ADMIN_KEY).toString('base64') },
  } as KubernetesObject;
}

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: the console (real API server)', { timeout: 90_000 }, () => {
  let op: Operator;
  let ns: string;
  let drop: () => Promise<void>;
  let admin: ConsoleClient;
  const origin = () => new URL(op.consoleUrl as string).origin.replace('localhost', '127.0.0.1');

  beforeAll(async () => {
    await ensureCrds();
    const n = await createNamespace('console');
    ns = n.name;
    drop = n.drop;
    const gateways = connectorYaml(ns, 'gateways');
    (gateways.metadata as Record<string, unknown>)['annotations'] = { 'argocd.argoproj.io/tracking-id': 'platform:acl/Connector:gateways' };
    await apply(loadConfig(), [
      gateways,
      bundleYaml(ns, 'docs', { connector: 'gateways' }),
      ruleYaml(ns, 'team', TEAM_RULE),
      apiKeySecret(ns, 'tenant-api-key-0123456789abcdef'),
      adminSecret(ns),
    ]);
    op = await startE2EOperator({ namespace: ns });
    await waitFor('the first token', () => readToken(ns, 'gateways'));
    admin = await signInAt(origin(), ADMIN_KEY);
  });
  afterAll(async () => {
    await op?.stop();
    await drop?.();
  });

  it("signs in with a labelled Secret's key, and refuses one without the label", async () => {
    await expect(signInAt(origin(), 'not-an-admin-key-0123456789')).rejects.toThrow(/401/);
    expect((await admin.get('/console/')).text).toContain(ns);
  });

  it('names the GitOps owner that would revert a change', async () => {
    const page = await admin.get(`/console/t/${ns}/connectors`);
    expect(page.text).toContain('Managed by Argo CD');
    expect(page.text).toContain('argocd.argoproj.io/tracking-id');
  });

  it('Deactivate patches the Connector (kubectl sees spec.active false) and the bundle answers 403', async () => {
    const token = (await readToken(ns, 'gateways')) as string;
    expect((await admin.post(`/console/t/${ns}/connectors/gateways/deactivate`, {})).status).toBe(303);
    expect((await customApi(ns).get('Connector', 'gateways'))['spec']).toMatchObject({ active: false });
    expect((await fetchBundle(op, ns, 'gateways', 'docs', token)).status).toBe(403);
    expect((await admin.post(`/console/t/${ns}/connectors/gateways/activate`, {})).status).toBe(303);
    expect((await fetchBundle(op, ns, 'gateways', 'docs', token)).status).toBe(200);
  });

  it('Rotate shows the new token once; the old one gets 401 and the Secret holds the new one', async () => {
    const old = (await readToken(ns, 'gateways')) as string;
    const r = await admin.post(`/console/t/${ns}/connectors/gateways/rotate`, {});
    expect(r.status).toBe(200);
    const token = /id="new-token" type="text" readonly value="([^"]+)"/.exec(r.text)?.[1] as string;
    expect(token).toMatch(/^agent_/);
    expect(token).not.toBe(old);
    expect((await fetchBundle(op, ns, 'gateways', 'docs', old)).status).toBe(401);
    expect((await fetchBundle(op, ns, 'gateways', 'docs', token)).status).toBe(200);
    expect(await readToken(ns, 'gateways')).toBe(token);
    expect((await customApi(ns).get('Connector', 'gateways'))['spec']).toMatchObject({ tokenRotation: 1 });
  });

  it('Regenerate patches the annotation, and status.translation.regenerate takes its value', async () => {
    expect((await admin.post(`/console/t/${ns}/rules/team/regenerate`, {})).status).toBe(303);
    const rule = await customApi(ns).get('Rule', 'team');
    const value = (rule['metadata'] as { annotations?: Record<string, string> }).annotations?.['acl.policyagent.dev/regenerate'];
    expect(value).toMatch(/^\d{4}-\d\d-\d\dT/);
    await waitFor('the translation made for the new value', async () => {
      const status = (await customApi(ns).status('Rule', 'team')) as { translation?: { regenerate?: string } };
      return status.translation?.regenerate === value;
    });
    const page = await admin.get(`/console/t/${ns}/rules/team`);
    expect(page.text).toContain('Regenerate: wrote');
  });
});
