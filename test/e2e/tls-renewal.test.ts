// The self-signed TLS Secret the operator made is renewed before it expires (it used to be kept
// for its whole year, then every client failed).
import { connect } from 'node:tls';
import { expect, it } from 'vitest';
import { clientsFor } from '../../src/kube/index.ts';
import { createLogger } from '../../src/log.ts';
import { startOperator } from '../../src/modes/index.ts';
import { selfSignedCertificate } from '../../src/tls/index.ts';
import { adminClients, loadConfig, operatorConfig } from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

function servedCertificate(url: string): Promise<{ validTo: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false }, () => {
      const c = s.getPeerCertificate();
      s.end();
      resolve({ validTo: c.valid_to });
    });
    s.on('error', reject);
  });
}

describeE2E('Kubernetes: TLS Secret renewal (real API server)', { timeout: 60_000 }, (e2e) => {
  it('renews the self-signed certificate it created before it expires', async () => {
    const { ns } = await e2e.tenant('rv-tls');
    // What the operator created 364 days and 23 hours ago (same code, same labels): expires in an hour.
    const pems = await selfSignedCertificate({
      commonName: `acl-operator.${ns}.svc`,
      organization: 'acl-operator',
      dnsNames: ['acl-operator', 'localhost'],
      ips: ['127.0.0.1'],
      now: new Date(Date.now() - (365 * 24 - 1) * 3600_000),
    });
    const b64 = (t: string): string => Buffer.from(t).toString('base64');
    await adminClients().core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'acl-operator-tls', namespace: ns, labels: { 'app.kubernetes.io/managed-by': 'acl-operator' } },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(pems.cert), 'tls.key': b64(pems.private), 'ca.crt': b64(pems.cert) },
      },
    });
    const op = await e2e.operator(
      startOperator(operatorConfig(ns, 'a', { tls: { mode: 'secret', name: 'acl-operator-tls' } }), {
        clients: clientsFor(loadConfig()),
        log: createLogger('silent'),
      }),
    );
    const served = await servedCertificate(op.apiUrl);
    const left = new Date(served.validTo).getTime() - Date.now();
    console.log(`served certificate valid to ${served.validTo} (${Math.round(left / 60_000)} minutes left)`);
    expect(left).toBeGreaterThan(7 * 86_400_000);
  });
});
