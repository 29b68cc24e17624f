// Connectors against a real API server: token Secrets, ownership and garbage collection, rotation,
// revocation, and a Secret deleted by hand.
import { expect, it } from 'vitest';
import { adminClients, fetchBundle, readToken, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

describeE2E('Kubernetes: connectors and token Secrets (real API server)', { timeout: 150_000 }, (e2e) => {
  async function setup(prefix: string) {
    const t = await e2e.tenant(prefix, docsTenant);
    return { ...t, o: await e2e.operator({ namespace: t.ns }) };
  }

  it('creates the token Secret owned by the Connector; the garbage collector deletes it with the Connector', async () => {
    const { ns, api } = await setup('owner');
    const { core } = adminClients();
    const secret = await waitFor('token Secret', async () => core.readNamespacedSecret({ name: 'gateways-token', namespace: ns }));
    const connector = await api.get('Connector', 'gateways');
    expect(secret.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'acl.policyagent.dev/v1alpha1',
        kind: 'Connector',
        name: 'gateways',
        uid: connector.metadata.uid,
        controller: true,
      }),
    ]);
    expect(secret.metadata?.labels).toMatchObject({ 'acl.policyagent.dev/connector': 'gateways' });
    expect(Buffer.from(secret.data?.['token'] ?? '', 'base64').toString()).toMatch(/^agent_[A-Za-z0-9_-]{43}$/);
    const status = await waitFor('connector Active', async () => {
      const s = await api.status('Connector', 'gateways');
      return s['phase'] === 'Active' ? s : undefined;
    });
    expect(status).toMatchObject({
      tokenSecretName: 'gateways-token',
      bundles: ['docs'],
      conditions: expect.arrayContaining([expect.objectContaining({ type: 'TokenIssued', status: 'True' })]),
    });
    expect(JSON.stringify(status)).not.toContain(Buffer.from(secret.data?.['token'] ?? '', 'base64').toString());

    await api.remove('Connector', 'gateways');
    // The collector re-reads discovery every 30 s, so a CRD created moments ago can take that long.
    await waitFor(
      'token Secret garbage-collected',
      async () => {
        try {
          await core.readNamespacedSecret({ name: 'gateways-token', namespace: ns });
          return false;
        } catch {
          return true;
        }
      },
      120_000,
    );
  });

  it('rotates, revokes and re-issues through spec fields; the old token is refused at once', async () => {
    const { ns, api, o, token } = await setup('rotate');
    const first = await token();
    await waitFor('bundle served', async () => (await fetchBundle(o, ns, 'gateways', 'docs', first)).status === 200);

    await api.patchSpec('Connector', 'gateways', { tokenRotation: 1 });
    const second = await waitFor('rotated token', async () => {
      const t = await readToken(ns, 'gateways');
      return t !== first ? t : undefined;
    });
    // The Secret is written during the drain that publishes the new token: it can be read a moment
    // before that publish. Once the new token opens the bundle, the old one is refused (one publish).
    await waitFor('rotated token served', async () => (await fetchBundle(o, ns, 'gateways', 'docs', second)).status === 200);
    expect((await fetchBundle(o, ns, 'gateways', 'docs', first)).status).toBe(401);

    await api.patchSpec('Connector', 'gateways', { revoked: true });
    await waitFor('Secret emptied', async () => (await readToken(ns, 'gateways')) === undefined);
    // Refused by the publish of the drain that emptied the Secret (a moment after it can be read).
    await waitFor('revoked token refused', async () => (await fetchBundle(o, ns, 'gateways', 'docs', second)).status === 401);
    expect(
      await waitFor('Inactive', async () => {
        const s = await api.status('Connector', 'gateways');
        return s['phase'] === 'Inactive' ? s : undefined;
      }),
    ).toMatchObject({ conditions: expect.arrayContaining([expect.objectContaining({ type: 'Ready', reason: 'Revoked' })]) });

    await api.patchSpec('Connector', 'gateways', { revoked: false });
    const third = await waitFor('re-issued token', () => readToken(ns, 'gateways'));
    expect([first, second]).not.toContain(third);
    await waitFor('re-issued token served', async () => (await fetchBundle(o, ns, 'gateways', 'docs', third)).status === 200);
    expect((await fetchBundle(o, ns, 'gateways', 'docs', second)).status).toBe(401);

    await api.patchSpec('Connector', 'gateways', { active: false });
    await waitFor('403 while inactive', async () => (await fetchBundle(o, ns, 'gateways', 'docs', third)).status === 403);
  });

  it('re-creates a token Secret deleted by hand, with a new token', async () => {
    const { ns, o, token } = await setup('deleted');
    const first = await token();
    await adminClients().core.deleteNamespacedSecret({ name: 'gateways-token', namespace: ns });
    const second = await waitFor('new token', async () => {
      const t = await readToken(ns, 'gateways');
      return t !== undefined && t !== first ? t : undefined;
    });
    await waitFor('new token served', async () => (await fetchBundle(o, ns, 'gateways', 'docs', second)).status === 200);
    expect((await fetchBundle(o, ns, 'gateways', 'docs', first)).status).toBe(401);
  });
});
