// How one flag's text becomes a value: addresses, the public URL and the decision log's target.
import type { SinkTarget } from '../fleet/index.ts';
import type { Address } from './types.ts';

/** host:port as an Address ("0.0.0.0:8443", ":8443", "[::1]:8443", "8443"), or what is wrong with it. */
export function parseAddress(text: string): Address | string {
  const m = /^(?:(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) return `"${text}" is not host:port`;
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/**
 * A public base URL: absolute, https (http only when the listener is plain HTTP), with no path,
 * query, fragment or credentials; a trailing slash is dropped (AuthZEN metadata: the PDP identifier).
 */
export function publicUrlOf(text: string, plainHttp: boolean): { ok: true; url: string } | { ok: false; message: string } {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return { ok: false, message: `"${text}" is not an absolute URL` };
  }
  if (u.protocol !== 'https:' && !(plainHttp && u.protocol === 'http:'))
    return { ok: false, message: `must be an https URL${plainHttp ? ' (or http, with --insecure-http)' : ''}, got ${u.protocol}` };
  if (u.search !== '' || u.hash !== '' || text.includes('?') || text.includes('#'))
    return { ok: false, message: 'must not have a query or a fragment' };
  if (u.username !== '' || u.password !== '') return { ok: false, message: 'must not carry credentials' };
  // AuthZEN metadata of a PDP identifier with a path lives at /.well-known/authzen-configuration/<path>,
  // which this service reads as the per-tenant form: an identifier is scheme, host and port only.
  if (u.pathname !== '/' && u.pathname !== '')
    return {
      ok: false,
      message: `must be scheme, host and port only (no path such as ${JSON.stringify(u.pathname)}): AuthZEN clients find the metadata at /.well-known/authzen-configuration of the host`,
    };
  return { ok: true, url: u.origin };
}

/**
 * The public URL in Kubernetes when --public-url is not given: the Service's in-cluster name, on the
 * listener's port (deploy/40-service.yaml maps the same port). An ephemeral port (0) names no
 * Service port: then the listener's own URL is used.
 */
export function kubePublicUrl(serviceName: string, namespace: string, port: number): string | undefined {
  return port === 0 ? undefined : `https://${serviceName}.${namespace}.svc${port === 443 ? '' : `:${port}`}`;
}

/** --decision-log: off, stdout (or -), or a file path. */
export function decisionLogOf(text: string): SinkTarget {
  const t = text.trim();
  if (t === '' || t === 'off' || t === 'false') return { kind: 'off' };
  if (t === 'stdout' || t === '-') return { kind: 'stdout' };
  return { kind: 'file', path: t };
}
