import { describe, expect, it } from 'vitest';
import { configFromFlags } from '../config.ts';
import type { SigningState } from '../controller/index.ts';
import { generateSigningKeyPem, readSigningKey } from '../signing/index.ts';
import type { Snapshot } from '../store/index.ts';
import { createWantedConfigMaps, opaSigningOf, sidecarUrl, tenantOpaData } from './kube-signing.ts';

type Tenant = NonNullable<ReturnType<Snapshot['tenants']['get']>>;

const A = readSigningKey(generateSigningKeyPem(2048));
const B = readSigningKey(generateSigningKeyPem(2048));
const ROTATING: SigningState = { unsigned: false, ring: { current: B, previous: A }, problem: undefined };
const URL = 'https://acl-operator.acl-system.svc:8443';

/** The parts of a tenant's snapshot the ConfigMap reads: its bundles (name, connector) and connectors. */
function tenant(name: string, bundles: Record<string, string>, connectors: string[]): Tenant {
  return {
    tenant: name,
    bundles: new Map(Object.entries(bundles).map(([b, connector]) => [b, { tenant: name, name: b, connector }])),
    connectors: new Map(connectors.map((c) => [c, { tenant: name, name: c }])),
  } as unknown as Tenant;
}
const snapshot = (...tenants: Tenant[]): Snapshot => ({ tenants: new Map(tenants.map((t) => [t.tenant, t])) }) as unknown as Snapshot;

describe("a tenant's acl-opa ConfigMap", () => {
  it('holds one configuration per bundle whose connector exists, pinned to the current key, and every public key', () => {
    const data = tenantOpaData(tenant('shop', { docs: 'gw', orphan: 'gone' }, ['gw']), opaSigningOf(ROTATING), URL, true);
    expect(Object.keys(data ?? {}).sort()).toEqual([`${A.kid}.pem`, `${B.kid}.pem`, 'docs.yaml'].sort());
    expect(data?.[`${A.kid}.pem`]).toBe(A.publicKeyPem);
    const config = data?.['docs.yaml'] ?? '';
    expect(config).toContain(`url: ${URL}/shop/connectors/policyagent/gw`);
    expect(config).toContain('ca_cert: /var/run/acl-operator/ca.crt');
    expect(config).toContain('token_path: /var/run/acl-operator/token');
    expect(config).toContain('persistence_directory: /var/opa');
    expect(config).toContain(`resource: bundles/docs?key=${B.kid}`);
    expect(config).toContain(`keyid: ${B.kid}`);
    expect(config).toContain(`${A.kid}:`);
  });

  it('holds no signing block and no key with --unsigned-bundles, and no CA over plain HTTP', () => {
    const data = tenantOpaData(tenant('shop', { docs: 'gw' }, ['gw']), opaSigningOf({ unsigned: true }), 'http://x', false);
    expect(Object.keys(data ?? {})).toEqual(['docs.yaml']);
    expect(data?.['docs.yaml']).not.toContain('signing');
    expect(data?.['docs.yaml']).not.toContain('ca_cert');
  });

  it('is wanted for no tenant without a served bundle', () => {
    const wanted = createWantedConfigMaps(URL, true)(
      snapshot(tenant('shop', { docs: 'gw' }, ['gw']), tenant('empty', {}, ['gw']), tenant('orphans', { docs: 'none' }, [])),
      ROTATING,
    );
    expect([...wanted.keys()]).toEqual(['shop']);
  });

  it('is printed again only when the bundles, their connectors or the keys change', () => {
    const wanted = createWantedConfigMaps(URL, true);
    const first = wanted(snapshot(tenant('shop', { docs: 'gw' }, ['gw'])), ROTATING).get('shop')?.();
    expect(wanted(snapshot(tenant('shop', { docs: 'gw' }, ['gw'])), ROTATING).get('shop')?.()).toBe(first);
    const retired: SigningState = { unsigned: false, ring: { current: B }, problem: undefined };
    const after = wanted(snapshot(tenant('shop', { docs: 'gw' }, ['gw'])), retired).get('shop')?.();
    expect(Object.keys(after ?? {}).sort()).toEqual([`${B.kid}.pem`, 'docs.yaml']);
  });
});

describe('the sidecar URL', () => {
  it('is the Service in the operator namespace, over HTTP when the API listener has no TLS', () => {
    const tls = configFromFlags(['--listen', '0.0.0.0:8443', '--tls-secret', 'acl-operator-tls']);
    expect(sidecarUrl(tls, 'acl-system')).toBe('https://acl-operator.acl-system.svc:8443');
    const plain = configFromFlags(['--listen', '0.0.0.0:8080', '--insecure-http']);
    expect(sidecarUrl(plain, 'acl-system')).toBe('http://acl-operator.acl-system.svc:8080');
  });
});
