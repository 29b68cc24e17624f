// The webhook's caBundle upkeep against a fake API: written where it differs (and only there), left
// to cert-manager when annotated, quiet when the configuration does not exist, never throwing.
import type { V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ANNOTATION_INJECT_CA_FROM, createWebhookCa, type WebhookApi } from './webhook.ts';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const BUNDLE = Buffer.from(CA).toString('base64');

interface Fake extends WebhookApi {
  current: V1ValidatingWebhookConfiguration | undefined;
  patches: object[][];
  reads: number;
  /** Most calls in flight at once. */
  overlap: number;
  failPatch?: { code: number };
}

function webhook(name: string, caBundle?: string): NonNullable<V1ValidatingWebhookConfiguration['webhooks']>[number] {
  return {
    name,
    clientConfig: { url: 'https://127.0.0.1:8443/admission/validate', ...(caBundle === undefined ? {} : { caBundle }) },
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
  };
}

/** Applies the RFC 6902 operations the upkeep sends (test and add on /webhooks/<i>/...). */
function applyPatch(target: V1ValidatingWebhookConfiguration, ops: object[]): void {
  for (const op of ops as { op: string; path: string; value: string }[]) {
    const m = /^\/webhooks\/(\d+)\/(name|clientConfig\/caBundle)$/.exec(op.path);
    const w = m ? target.webhooks?.[Number(m[1])] : undefined;
    if (!m || !w) throw Object.assign(new Error(`no such path ${op.path}`), { code: 422 });
    if (op.op === 'test' && w.name !== op.value) throw Object.assign(new Error('test failed'), { code: 422 });
    if (op.op === 'add') w.clientConfig.caBundle = op.value;
  }
}

function fakeApi(current: V1ValidatingWebhookConfiguration | undefined): Fake {
  let inFlight = 0;
  const fake: Fake = {
    current,
    patches: [],
    reads: 0,
    overlap: 0,
    async readValidatingWebhookConfiguration() {
      inFlight++;
      fake.overlap = Math.max(fake.overlap, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      fake.reads++;
      if (!fake.current) throw Object.assign(new Error('not found'), { code: 404 });
      return structuredClone(fake.current);
    },
    async patchValidatingWebhookConfiguration({ body }) {
      if (fake.failPatch) throw Object.assign(new Error('refused'), fake.failPatch);
      if (!fake.current) throw Object.assign(new Error('not found'), { code: 404 });
      fake.patches.push(body as object[]);
      applyPatch(fake.current, body as object[]);
      return structuredClone(fake.current);
    },
  };
  return fake;
}

function logged(): { log: pino.Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s) as { level: number; msg: string }) });
  return { log, lines };
}

describe('the webhook caBundle upkeep', () => {
  it('writes the serving CA into every webhook whose caBundle differs, and nothing once they are equal', async () => {
    const api = fakeApi({
      metadata: { name: 'acl-operator' },
      webhooks: [webhook('a.acl.policyagent.dev'), webhook('b.acl.policyagent.dev', BUNDLE), webhook('c.acl.policyagent.dev', 'b2xk')],
    });
    const upkeep = createWebhookCa({ api, name: 'acl-operator', ca: () => CA, log: pino({ level: 'silent' }) });
    await upkeep.sync();
    expect(api.patches).toEqual([
      [
        { op: 'test', path: '/webhooks/0/name', value: 'a.acl.policyagent.dev' },
        { op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: BUNDLE },
        { op: 'test', path: '/webhooks/2/name', value: 'c.acl.policyagent.dev' },
        { op: 'add', path: '/webhooks/2/clientConfig/caBundle', value: BUNDLE },
      ],
    ]);
    expect(api.current?.webhooks?.map((w) => w.clientConfig.caBundle)).toEqual([BUNDLE, BUNDLE, BUNDLE]);
    await upkeep.sync();
    expect(api.patches).toHaveLength(1);
  });

  it('follows the CA when it changes (a renewal)', async () => {
    const api = fakeApi({ metadata: { name: 'acl-operator' }, webhooks: [webhook('a.acl.policyagent.dev', BUNDLE)] });
    let ca = CA;
    const upkeep = createWebhookCa({ api, name: 'acl-operator', ca: () => ca, log: pino({ level: 'silent' }) });
    await upkeep.sync();
    expect(api.patches).toEqual([]);
    ca = CA.replace('MIIB', 'MIIC');
    await upkeep.sync();
    expect(api.current?.webhooks?.[0]?.clientConfig.caBundle).toBe(Buffer.from(ca).toString('base64'));
  });

  it(`leaves a configuration annotated ${ANNOTATION_INJECT_CA_FROM} to cert-manager`, async () => {
    const api = fakeApi({
      metadata: { name: 'acl-operator', annotations: { [ANNOTATION_INJECT_CA_FROM]: 'acl-system/acl-operator-tls' } },
      webhooks: [webhook('a.acl.policyagent.dev', 'aW5qZWN0ZWQ=')],
    });
    const { log, lines } = logged();
    const upkeep = createWebhookCa({ api, name: 'acl-operator', ca: () => CA, log });
    await upkeep.sync();
    await upkeep.sync();
    expect(api.patches).toEqual([]);
    expect(api.current?.webhooks?.[0]?.clientConfig.caBundle).toBe('aW5qZWN0ZWQ=');
    expect(lines.filter((l) => l.msg.includes('cert-manager'))).toHaveLength(1);
  });

  it('says once that the configuration does not exist, and writes it when it appears', async () => {
    const api = fakeApi(undefined);
    const { log, lines } = logged();
    const upkeep = createWebhookCa({ api, name: 'acl-operator', ca: () => CA, log });
    await upkeep.sync();
    await upkeep.sync();
    expect(lines.filter((l) => l.msg.startsWith('No ValidatingWebhookConfiguration'))).toHaveLength(1);
    api.current = { metadata: { name: 'acl-operator' }, webhooks: [webhook('a.acl.policyagent.dev')] };
    await upkeep.sync();
    expect(api.current.webhooks?.[0]?.clientConfig.caBundle).toBe(BUNDLE);
  });

  it('logs a refused patch with the RBAC it needs, and never throws', async () => {
    const api = fakeApi({ metadata: { name: 'acl-operator' }, webhooks: [webhook('a.acl.policyagent.dev')] });
    api.failPatch = { code: 403 };
    const { log, lines } = logged();
    const upkeep = createWebhookCa({ api, name: 'acl-operator', ca: () => CA, log });
    await expect(upkeep.sync()).resolves.toBeUndefined();
    const failed = lines.find((l) => l.msg.startsWith('Failed to keep')) as { hint?: string } | undefined;
    expect(failed?.hint).toMatch(/get and patch on validatingwebhookconfigurations named acl-operator/);
  });

  it('runs one sync at a time, and none without a CA', async () => {
    const api = fakeApi({ metadata: { name: 'acl-operator' }, webhooks: [webhook('a.acl.policyagent.dev')] });
    const upkeep = createWebhookCa({ api, name: 'acl-operator', ca: () => CA, log: pino({ level: 'silent' }) });
    await Promise.all([upkeep.sync(), upkeep.sync(), upkeep.sync()]);
    expect(api.overlap).toBe(1);
    expect(api.patches).toHaveLength(1);
    const none = fakeApi(undefined);
    await createWebhookCa({ api: none, name: 'acl-operator', ca: () => undefined, log: pino({ level: 'silent' }) }).sync();
    expect(none.reads).toBe(0);
  });
});
