// The console in Kubernetes mode against the real API server (issue 16): an admin key from a labelled
// Secret signs in; actions patch the objects, so kubectl sees them, and the bundle endpoint answers as
// the action says; a GitOps owner's annotation is named on the page.
import { beforeAll, expect, it } from 'vitest';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Operator } from '../../src/modes/index.ts';
import { type ConsoleClient, signInAt } from '../support/console.ts';
import { apiKeySecret, customApi, fetchBundle, labelledSecret, readToken, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

const ADMIN_KEY = 'console-admin-key-0123456789abcdef';

/** The docs tenant, its Connector owned by Argo CD (an annotation the console names), with an API key and an admin key. */
function tenantObjects(ns: string): KubernetesObject[] {
  const tracking = { 'argocd.argoproj.io/tracking-id': 'platform:acl/Connector:gateways' };
  const owned = (o: KubernetesObject): KubernetesObject =>
    o.kind === 'Connector' ? { ...o, metadata: { ...o.metadata, annotations: tracking } } : o;
  return [
    ...docsTenant(ns).map(owned),
    apiKeySecret(ns, 'tenant-api-key-0123456789abcdef'),
    labelledSecret(ns, 'console-admin', 'acl.policyagent.dev/console-admin', ADMIN_KEY),
  ];
}

describeE2E('Kubernetes: the console (real API server)', { timeout: 90_000, perFile: true }, (e2e) => {
  let op: Operator;
  let ns: string;
  let admin: ConsoleClient;
  const origin = () => new URL(op.consoleUrl as string).origin.replace('localhost', '127.0.0.1');

  beforeAll(async () => {
    const t = await e2e.tenant('console', tenantObjects);
    ns = t.ns;
    op = await e2e.operator({ namespace: ns });
    await t.token();
    admin = await signInAt(origin(), ADMIN_KEY);
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

  it("shows a Rule's Rego as its status records it, though the operator holds the Rule without it", async () => {
    const recorded = await waitFor('the Rule translated', async () => {
      const status = (await customApi(ns).status('Rule', 'team')) as { translation?: { rego?: string } };
      return status.translation?.rego;
    });
    expect(op.source.get('Rule', ns, 'team')?.raw['status']).not.toHaveProperty('translation.rego');
    const page = await admin.get(`/console/t/${ns}/rules/team`);
    const shown = /<pre aria-label="Rego of rule team" tabindex="0"><code>([^<]*)<\/code>/.exec(page.text)?.[1];
    const text = (html: string): string =>
      html.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
    expect(text(shown ?? '')).toBe(recorded);
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
