// Bundle signing in Kubernetes mode, against a real API server: the key Secret is created once and
// survives restarts; every tenant's ConfigMap acl-opa carries its sidecars' configuration and the
// public keys; a rotation is driven by editing Kubernetes objects alone (annotate the Secret; the
// previous key goes once no agent verifies with it); and a Secret broken by hand is a problem while
// the last good key keeps signing. Agents are simulated with OPA status reports (test/support/reports.ts).
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import type { SigningState } from '../../src/controller/index.ts';
import type { Operator } from '../../src/modes/index.ts';
import { SIGNING_KEY_LABEL } from '../../src/opa/index.ts';
import { generateSigningKeyPem, readSigningKey, verifySignaturesFile } from '../../src/signing/index.ts';
import { adminClients, fetchBundle, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant, type E2E } from '../support/e2e.ts';
import { statusReport } from '../support/reports.ts';
import { tarFile } from '../support/tar.ts';

const SECRET = 'acl-signing-key';
const ROTATE = 'acl.policyagent.dev/rotate';

describeE2E('Kubernetes: the bundle signing key (real API server)', { timeout: 120_000 }, (e2e) => {
  const core = () => adminClients().core;
  const readSecret = (ns: string): Promise<V1Secret> => core().readNamespacedSecret({ name: SECRET, namespace: ns });
  const readConfigMap = async (ns: string): Promise<V1ConfigMap | undefined> =>
    core()
      .readNamespacedConfigMap({ name: 'acl-opa', namespace: ns })
      .catch(() => undefined);
  const pem = (s: V1Secret, field: string): string | undefined => {
    const v = s.data?.[field];
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
  };
  const kidOf = (text: string | undefined): string | undefined => (text === undefined ? undefined : readSigningKey(text).kid);
  const signingOf = (o: Operator): SigningState => o.signing.get();
  // An agent window of 3 s: retirement waits a whole window after a start (an empty registry is not an empty fleet).
  const WINDOW_S = 3;
  const start = (e: E2E, ns: string, identity = 'e2e-operator'): Promise<Operator> =>
    e.operator({ namespace: ns, identity, signingRefreshMs: 100, agentStatusIntervalMs: 100, config: { agentExpirySeconds: WINDOW_S } });

  /** An OPA reporting every 300 ms (well within the window) until stopped; `stop` sends its last, stopping report. */
  function agent(o: () => Operator, ns: string, token: string, id: string, key: string | undefined) {
    let running = true;
    const loop = (async () => {
      while (running) {
        await report(o(), ns, token, id, key).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    return {
      async stop(): Promise<void> {
        running = false;
        await loop;
        await report(o(), ns, token, id, key, true);
      },
    };
  }

  async function report(o: Operator, ns: string, token: string, id: string, key: string | undefined, stopping = false): Promise<void> {
    const body = statusReport(id, { docs: { revision: '1', ...(stopping ? { stopping } : {}) } });
    const labels = { id, version: '1.1.0', ...(key === undefined ? {} : { [SIGNING_KEY_LABEL]: key }) };
    const res = await fetch(`${o.apiUrl}/${ns}/connectors/policyagent/gateways/status`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify({ ...body, labels }),
    });
    expect(res.status).toBe(200);
  }

  async function annotate(ns: string, value: string): Promise<void> {
    const s = await readSecret(ns);
    await core().replaceNamespacedSecret({
      name: SECRET,
      namespace: ns,
      body: { ...s, metadata: { ...s.metadata, annotations: { ...s.metadata?.annotations, [ROTATE]: value } } },
    });
  }

  it('creates the key Secret once, keeps it across restarts, and publishes the OPA configuration and public key', async () => {
    const t = await e2e.tenant('sign', (ns) => docsTenant(ns));
    const first = await start(e2e, t.ns);
    const created = await waitFor('the signing key Secret', () => readSecret(t.ns).catch(() => undefined));
    const kid = kidOf(pem(created, 'tls.key'));
    expect(created.metadata?.annotations?.['acl.policyagent.dev/key-id']).toBe(kid);
    expect(created.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('acl-operator');
    const cm = await waitFor('the ConfigMap acl-opa', async () => {
      const found = await readConfigMap(t.ns);
      return found?.data?.[`${kid}.pem`] ? found : undefined;
    });
    expect(Object.keys(cm.data ?? {}).sort()).toEqual([`${kid}.pem`, 'docs.yaml']);
    expect(cm.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('acl-operator');
    const config = cm.data?.['docs.yaml'] ?? '';
    expect(config).toContain(`/${t.ns}/connectors/policyagent/gateways`);
    expect(config).toContain(`resource: bundles/docs?key=${kid}`);
    expect(config).toContain(`keyid: ${kid}`);
    expect(config).toContain('token_path: /var/run/acl-operator/token');
    expect(config).toContain('persistence_directory: /var/opa');
    expect(cm.data?.[`${kid}.pem`]).toBe(readSigningKey(pem(created, 'tls.key') ?? '').publicKeyPem);

    await first.stop();
    const second = await start(e2e, t.ns, 'e2e-operator-2');
    const again = await readSecret(t.ns);
    expect(again.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
    const s = signingOf(second);
    expect(s.unsigned ? undefined : s.ring?.current.kid).toBe(kid);
  });

  it('deletes the ConfigMap acl-opa once the tenant has no Bundle left, and writes it again when one comes back', async () => {
    const t = await e2e.tenant('sign-cm', (ns) => docsTenant(ns));
    await start(e2e, t.ns);
    await waitFor('the ConfigMap acl-opa', async () => (await readConfigMap(t.ns))?.data?.['docs.yaml']);
    await t.api.remove('Bundle', 'docs');
    await waitFor('the ConfigMap gone', async () => ((await readConfigMap(t.ns)) === undefined ? true : undefined));
    await t.apply(docsTenant(t.ns));
    await waitFor('the ConfigMap back', async () => (await readConfigMap(t.ns))?.data?.['docs.yaml']);
  });

  it('signs the archive with the Secret key', async () => {
    const t = await e2e.tenant('sign-arc', (ns) => docsTenant(ns));
    const o = await start(e2e, t.ns);
    const token = await t.token();
    const secret = await waitFor('the signing key Secret', () => readSecret(t.ns).catch(() => undefined));
    const key = readSigningKey(pem(secret, 'tls.key') ?? '');
    const served = await waitFor('the bundle', async () => {
      const b = await fetchBundle(o, t.ns, 'gateways', 'docs', token);
      return b.status === 200 ? b : undefined;
    });
    const verified = verifySignaturesFile(tarFile(served.bytes, '.signatures.json') ?? '', key.publicKeyPem);
    expect(verified?.kid).toBe(key.kid);
  });

  it('rotates when the Secret is annotated, keeps the previous key while an agent verifies with it, then retires it', async () => {
    const t = await e2e.tenant('sign-rot', (ns) => docsTenant(ns));
    let o = await start(e2e, t.ns);
    const token = await t.token();
    const before = await waitFor('the signing key Secret', () => readSecret(t.ns).catch(() => undefined));
    const a = kidOf(pem(before, 'tls.key')) as string;
    // An OPA configured before the rotation: it verifies with A, and reports all along.
    const opaA = agent(() => o, t.ns, token, 'opa-a', a);
    await waitFor('the agent', async () => (o.fleet.agents.agents(t.ns, 'docs', Date.now()).length === 1 ? true : undefined));

    await annotate(t.ns, '1');
    const rotated = await waitFor('the rotation', async () => {
      const s = await readSecret(t.ns);
      return s.data?.['previous.key'] ? s : undefined;
    });
    const b = kidOf(pem(rotated, 'tls.key')) as string;
    expect(b).not.toBe(a);
    expect(kidOf(pem(rotated, 'previous.key'))).toBe(a);
    expect(rotated.metadata?.annotations).toMatchObject({
      'acl.policyagent.dev/rotated': '1',
      'acl.policyagent.dev/key-id': b,
      'acl.policyagent.dev/previous-key-id': a,
    });
    const both = await waitFor('the ConfigMap with both keys', async () => {
      const cm = await readConfigMap(t.ns);
      return cm?.data?.[`${a}.pem`] && cm.data[`${b}.pem`] ? cm : undefined;
    });
    expect(both.data?.['docs.yaml']).toContain(`keyid: ${b}`);
    const s = signingOf(o);
    expect(s.unsigned ? undefined : [s.ring?.current.kid, s.ring?.previous?.kid]).toEqual([b, a]);

    // A restart while the rotation runs: the recorded value starts nothing, and the new process
    // (whose registry starts empty) keeps the previous key, which opa-a still verifies with.
    await o.stop();
    o = await start(e2e, t.ns, 'e2e-operator-2');
    const after = await readSecret(t.ns);
    expect([kidOf(pem(after, 'tls.key')), kidOf(pem(after, 'previous.key'))]).toEqual([b, a]);
    await waitFor('the agent heard again', async () => (o.fleet.agents.agents(t.ns, 'docs', Date.now()).length === 1 ? true : undefined));

    // The sidecar restarted with the configuration pinned to B: the new OPA reports B, the old one stops.
    const opaB = agent(() => o, t.ns, token, 'opa-b', b);
    await waitFor('opa-b heard', async () => (o.fleet.agents.agents(t.ns, 'docs', Date.now()).length === 2 ? true : undefined));
    expect((await readSecret(t.ns)).data?.['previous.key']).toBeDefined();
    await opaA.stop();
    await waitFor('the previous key retired', async () =>
      (await readSecret(t.ns)).data?.['previous.key'] === undefined ? true : undefined,
    );
    const retired = await readSecret(t.ns);
    expect(kidOf(pem(retired, 'tls.key'))).toBe(b);
    expect(retired.metadata?.annotations?.['acl.policyagent.dev/previous-key-id']).toBeUndefined();
    await opaB.stop();
    await waitFor('the ConfigMap without the previous key', async () =>
      (await readConfigMap(t.ns))?.data?.[`${a}.pem`] === undefined ? true : undefined,
    );
  });

  it('serves the previous key’s archive to an OPA pinned to it during a rotation', async () => {
    const t = await e2e.tenant('sign-key', (ns) => docsTenant(ns));
    const o = await start(e2e, t.ns);
    const token = await t.token();
    const before = await waitFor('the signing key Secret', () => readSecret(t.ns).catch(() => undefined));
    const a = readSigningKey(pem(before, 'tls.key') ?? '');
    await report(o, t.ns, token, 'opa-a', a.kid);
    await waitFor('the agent', async () => (o.fleet.agents.agents(t.ns, 'docs', Date.now()).length === 1 ? true : undefined));
    await annotate(t.ns, 'go');
    await waitFor('the rotation', async () => {
      const s = signingOf(o);
      return !s.unsigned && s.ring?.previous?.kid === a.kid ? true : undefined;
    });
    const res = await fetch(`${o.apiUrl}/${t.ns}/connectors/policyagent/gateways/bundles/docs?key=${a.kid}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    const verified = verifySignaturesFile(tarFile(Buffer.from(await res.arrayBuffer()), '.signatures.json') ?? '', a.publicKeyPem);
    expect(verified?.kid).toBe(a.kid);
  });

  it.each([
    ['malformed', { 'tls.key': 'not a key' }, 'Opaque', 'field tls.key is not a PEM private key'],
    ['weak', { 'tls.key': generateSigningKeyPem(1024) }, 'Opaque', 'field tls.key is an RSA key of 1024 bits'],
    ['of the wrong type', { username: 'x', password: 'y' }, 'kubernetes.io/basic-auth', 'is of type kubernetes.io/basic-auth'],
  ])('keeps signing with the last good key when the Secret is %s', async (_what, data, type, problem) => {
    const t = await e2e.tenant('sign-bad', (ns) => docsTenant(ns));
    const o = await start(e2e, t.ns);
    const good = await waitFor('the signing key Secret', () => readSecret(t.ns).catch(() => undefined));
    const kid = kidOf(pem(good, 'tls.key'));
    await waitFor('the key read', async () => {
      const s = signingOf(o);
      return !s.unsigned && s.ring?.current.kid === kid ? true : undefined;
    });
    // Replaced by hand: edited in place, or (a type cannot change) deleted and created again, until
    // this create comes before the leader's (it creates the Secret it finds missing).
    const b64 = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
    if (type === 'Opaque') {
      await core().replaceNamespacedSecret({ name: SECRET, namespace: t.ns, body: { ...(await readSecret(t.ns)), data: b64 } });
    } else {
      await waitFor('the wrong-type Secret in place', async () => {
        await core()
          .deleteNamespacedSecret({ name: SECRET, namespace: t.ns })
          .catch(() => undefined);
        await core().createNamespacedSecret({ namespace: t.ns, body: { metadata: { name: SECRET, namespace: t.ns }, type, data: b64 } });
        return true;
      });
    }
    const broken = await waitFor('the problem', async () => {
      const s = signingOf(o);
      return !s.unsigned && s.problem?.includes(problem) ? s : undefined;
    });
    expect(broken.unsigned ? undefined : broken.ring?.current.kid).toBe(kid);
    expect(broken.unsigned ? '' : broken.problem).toContain(`Secret ${t.ns}/${SECRET}`);
    // Left as the person wrote it: the operator never overwrites a Secret it cannot read.
    expect((await readSecret(t.ns)).data).toEqual(b64);
  });
});
