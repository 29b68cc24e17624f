// A key rotation in Kubernetes mode with real OPAs (OPA_BIN, run for 1.1 and 0.61) started from the
// ConfigMap acl-opa exactly as a sidecar mounts it (only the in-pod paths and the Service URL are
// replaced by local ones): the OPA pinned to the old key keeps verifying and activating new revisions
// during the rotation, an OPA started from the rewritten ConfigMap verifies with the new key, the old
// key is retired once the old OPA stops, and neither OPA ever logs a verification error.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import type { Operator } from '../../src/modes/index.ts';
import { readSigningKey } from '../../src/signing/index.ts';
import { adminClients, customApi, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';
import { type RunningOpa, runOpa, waitForOpa } from '../support/opa.ts';

const OPA_BIN = process.env['OPA_BIN'];
const SECRET = 'acl-signing-key';

describeE2E(
  `Kubernetes: a key rotation with real OPAs from the acl-opa ConfigMap (OPA_BIN=${OPA_BIN ?? 'unset'})`,
  { timeout: 180_000 },
  (e2e) => {
    const core = () => adminClients().core;
    const readSecret = (ns: string): Promise<V1Secret> => core().readNamespacedSecret({ name: SECRET, namespace: ns });
    const kidOf = (s: V1Secret, field: string): string | undefined => {
      const v = s.data?.[field];
      return v === undefined ? undefined : readSigningKey(Buffer.from(v, 'base64').toString('utf8')).kid;
    };

    /** The ConfigMap's `docs.yaml` once it pins `kid`, with the pod's paths and the Service URL made local; an OPA started from it. */
    async function opaFrom(o: Operator, ns: string, token: string, kid: string): Promise<RunningOpa> {
      const config = await waitFor(`the ConfigMap pinned to ${kid}`, async () => {
        const cm = await core()
          .readNamespacedConfigMap({ name: 'acl-opa', namespace: ns })
          .catch(() => undefined);
        const text = cm?.data?.['docs.yaml'];
        return text?.includes(`keyid: ${kid}`) ? text : undefined;
      });
      const dir = mkdtempSync(join(tmpdir(), 'acl-sign-opa-'));
      writeFileSync(join(dir, 'token'), token);
      const local = config
        .replace(`http://acl-operator.${ns}.svc`, o.apiUrl)
        .replace('/var/run/acl-operator/token', join(dir, 'token'))
        .replace('/var/opa', join(dir, 'persist'));
      writeFileSync(join(dir, 'opa.yaml'), local);
      const opa = await runOpa(OPA_BIN as string, join(dir, 'opa.yaml'), dir);
      e2e.later(() => opa.stop());
      return opa;
    }

    /** Waits until OPA `id` reports `revision` active (its status report, as the fleet holds it). */
    const runs = (o: Operator, opa: RunningOpa, ns: string, id: string, revision: string): Promise<true> =>
      waitForOpa(opa, `${id} at revision ${revision}`, 60_000, () =>
        o.fleet.agents.agents(ns, 'docs', Date.now()).some((a) => a.id === id && a.activeRevision === revision) ? true : undefined,
      );
    const idOf = async (opa: RunningOpa): Promise<string> =>
      waitForOpa(opa, 'its id', 30_000, async () => {
        const res = await fetch(`${opa.url}/v1/config`).catch(() => undefined);
        const body = (await res?.json().catch(() => undefined)) as { result?: { labels?: { id?: string } } } | undefined;
        return body?.result?.labels?.id;
      });

    it.skipIf(!OPA_BIN)('keeps every OPA verifying through a rotation driven by annotating the Secret', async () => {
      const t = await e2e.tenant('sign-opa', (ns) => docsTenant(ns));
      // Long polls answered within 2 s, so each OPA reports well within the 10 s agent window.
      const o = await e2e.operator({
        namespace: t.ns,
        signingRefreshMs: 100,
        agentStatusIntervalMs: 100,
        config: { agentExpirySeconds: 10, maxLongPollSeconds: 2 },
      });
      const token = await t.token();
      const a = kidOf(await waitFor('the signing key Secret', () => readSecret(t.ns).catch(() => undefined)), 'tls.key') as string;

      const opa1 = await opaFrom(o, t.ns, token, a);
      const id1 = await idOf(opa1);
      await runs(o, opa1, t.ns, id1, '1');

      const s = await readSecret(t.ns);
      await core().replaceNamespacedSecret({
        name: SECRET,
        namespace: t.ns,
        body: { ...s, metadata: { ...s.metadata, annotations: { ...s.metadata?.annotations, 'acl.policyagent.dev/rotate': 'now' } } },
      });
      const b = await waitFor('the rotation', async () => {
        const r = await readSecret(t.ns);
        return r.data?.['previous.key'] ? kidOf(r, 'tls.key') : undefined;
      });
      // The rotation moves the revision once: the OPA pinned to A gets it signed by A.
      await runs(o, opa1, t.ns, id1, '2');
      // A rule edit during the rotation still reaches it.
      await customApi(t.ns).patchSpec('Rule', 'team', { actions: ['read', 'write'] });
      await runs(o, opa1, t.ns, id1, '3');

      const opa2 = await opaFrom(o, t.ns, token, b);
      const id2 = await idOf(opa2);
      await runs(o, opa2, t.ns, id2, '3');
      expect(kidOf(await readSecret(t.ns), 'previous.key')).toBe(a);

      await opa1.stop();
      await waitFor('the previous key retired', async () =>
        (await readSecret(t.ns)).data?.['previous.key'] === undefined ? true : undefined,
      );
      await customApi(t.ns).patchSpec('Rule', 'team', { actions: ['read'] });
      await runs(o, opa2, t.ns, id2, '4');
      for (const opa of [opa1, opa2]) expect(opa.output()).not.toMatch(/verif[a-z]* (error|fail)|signature|bundle_error/i);
    });
  },
);
