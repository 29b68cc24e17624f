// Self-signed certificates: how one is made (EC P-256, one year, usable as its own CA) and when
// one is due for renewal. The API listener and the Kubernetes TLS Secret both use them.
import { X509Certificate } from 'node:crypto';

/**
 * A self-signed certificate (EC P-256, one year). Marked as a CA so that clients can trust it
 * directly (curl --cacert, OPA ca_cert).
 */
export async function selfSignedCertificate(o: {
  commonName: string;
  organization: string;
  dnsNames: readonly string[];
  ips?: readonly string[];
  now: Date;
}): Promise<{ cert: string; private: string }> {
  // Loaded when a certificate is made, not at start: about 4 MB of heap that a replica reading its
  // certificate from a Secret (or serving plain HTTP) never needs.
  const { generate } = await import('selfsigned');
  return generate(
    [
      { name: 'commonName', value: o.commonName },
      { name: 'organizationName', value: o.organization },
    ],
    {
      keyType: 'ec',
      algorithm: 'sha256',
      notBeforeDate: new Date(o.now.getTime() - 60_000),
      notAfterDate: new Date(o.now.getTime() + 365 * 86_400_000),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        {
          name: 'subjectAltName',
          altNames: [...o.dnsNames.map((value) => ({ type: 2 as const, value })), ...(o.ips ?? []).map((ip) => ({ type: 7 as const, ip }))],
        },
      ],
    },
  );
}

/** True when the PEM certificate's validity ends within `withinMs` of `now` (or has ended). */
export function expiresWithin(pem: string, withinMs: number, now: Date): boolean {
  return new Date(new X509Certificate(pem).validTo).getTime() - now.getTime() <= withinMs;
}
