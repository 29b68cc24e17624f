// Regression: a conflict while writing a token Secret is never answered by writing the body computed
// before it. A CA update racing a rotation used to write the rotated-away token back.
import pino from 'pino';
import { Watch } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { createController, type Controller } from '../../src/controller/index.ts';
import { clientsFor, createKubeSource, type KubeClients } from '../../src/kube/index.ts';
import { createStore } from '../../src/store/index.ts';
import { connectorYaml, customApi, loadConfig, readToken, waitFor } from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

describeE2E('Kubernetes: token Secret conflicts (real API server)', { timeout: 60_000 }, (e2e) => {
  it('never writes a rotated-away token back into the Secret', async () => {
    const tenant = await e2e.tenant('rv-stale', (ns) => [connectorYaml(ns, 'gateways')]);
    const ns = tenant.ns;
    const real = clientsFor(loadConfig());
    let hold: Promise<void> | undefined;
    let held = false;
    const core = new Proxy(real.core, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        if (prop !== 'replaceNamespacedSecret') return v.bind(target);
        return async (args: unknown) => {
          // The first replace (syncCa's) is slow to reach the server.
          if (hold && !held) {
            held = true;
            await hold;
          }
          return (v as (a: unknown) => Promise<unknown>).call(target, args);
        };
      },
    });
    const clients: KubeClients = { ...real, core };
    let ca = '-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n';
    let controller: Controller | undefined;
    const store = createStore();
    const log = pino({ level: process.env['RV_LOG'] ?? 'silent' });
    const src = createKubeSource({
      clients,
      namespaces: [ns],
      log,
      enqueue: (k) => controller?.enqueue(k),
      caBundle: () => ca,
      restartMs: 50,
      maxRestartMs: 500,
    });
    e2e.later(() => src.stop());
    controller = createController({ objects: src, writer: src.writer, store, log });
    const ctl = controller;
    await src.start();
    for (const k of src.keys()) ctl.enqueue(k);
    await ctl.idle();
    const t0 = await tenant.token();
    await waitFor('cache has the Secret', () => src.writer.readTokenSecret(ns, 'gateways')?.token === t0);
    // Record every token the Secret ever holds from here on.
    const seen: string[] = [];
    const req = await new Watch(loadConfig()).watch(
      `/api/v1/namespaces/${ns}/secrets`,
      { fieldSelector: 'metadata.name=gateways-token' },
      (_t, obj: { data?: Record<string, string> }) => {
        const tok = obj.data?.['token'] === undefined ? '(none)' : Buffer.from(obj.data['token'], 'base64').toString();
        if (seen.at(-1) !== tok) seen.push(tok);
      },
      () => undefined,
    );
    e2e.later(() => req.abort());

    let release: () => void = () => undefined;
    hold = new Promise<void>((r) => {
      release = r;
    });
    ca = '-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n';
    const syncing = src.syncCa().catch((e: unknown) => console.log('syncCa failed', e));
    await waitFor('syncCa is writing', () => held, 3000);
    // Meanwhile the token is rotated (it leaked).
    await customApi(ns).patchSpec('Connector', 'gateways', { tokenRotation: 1 });
    const t1 = await waitFor('rotated token', async () => {
      const t = await readToken(ns, 'gateways');
      return t !== t0 ? t : undefined;
    });
    release();
    await syncing;
    await ctl.idle();
    const final = await readToken(ns, 'gateways');
    await waitFor('the watch saw the last write', () => seen.at(-1) === final);
    console.log(
      'tokens the Secret held, in order:',
      seen.map((t) => (t === t0 ? 'T0 (old)' : t === t1 ? 'T1 (rotated)' : t)),
    );
    expect(seen.slice(seen.indexOf(t1)).includes(t0)).toBe(false);
  });
});
