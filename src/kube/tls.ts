// The API listener's certificate in Kubernetes mode: a kubernetes.io/tls Secret in the operator's
// namespace. When it is missing, a self-signed certificate for the Service is created (the first
// replica wins; the others read it), so `kubectl apply -f deploy/` works without cert-manager. When
// cert-manager (or anyone) owns the Secret, it is only read, and re-read periodically: the files the
// listener watches are rewritten when it changes, which reloads the certificate without a restart.
// A certificate the operator made itself is renewed 30 days before it expires.
import { X509Certificate } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { expiresWithin, selfSignedCertificate } from '../tls/index.ts';
import { describeError, LABEL_MANAGED_BY, MANAGED_BY, statusOf } from './client.ts';

export interface TlsMaterial {
  readonly cert: string;
  readonly key: string;
  /** The CA clients trust: ca.crt when the Secret has one, else the (self-signed) certificate. */
  readonly ca: string;
}

export interface TlsSecretOptions {
  readonly core: CoreV1Api;
  readonly namespace: string;
  readonly name: string;
  /** The Service the certificate is generated for. */
  readonly serviceName: string;
  /** Folder the PEM files are written to (the listener watches it). */
  readonly dir: string;
  readonly log: Logger;
  /** Re-read period (default 60 s). */
  readonly refreshMs?: number;
  /** The CA changed (after the first read). */
  onCaChange?(ca: string): void;
  /** The clock, in ms since the epoch (default Date.now): a new certificate's start, an old one's time left. */
  readonly now?: () => number;
}

export interface TlsSecret {
  readonly files: { readonly cert: string; readonly key: string };
  ca(): string;
  stop(): void;
}

function decode(secret: V1Secret): TlsMaterial | string {
  const data = secret.data ?? {};
  const get = (k: string): string | undefined => (data[k] === undefined ? undefined : Buffer.from(data[k], 'base64').toString('utf8'));
  const cert = get('tls.crt');
  const key = get('tls.key');
  if (!cert?.includes('BEGIN CERTIFICATE') || !key?.includes('PRIVATE KEY')) return 'it has no PEM tls.crt and tls.key';
  const ca = get('ca.crt');
  return { cert, key, ca: ca?.includes('BEGIN CERTIFICATE') ? ca : cert };
}

/** The injected clock (modes/cluster.ts passes the mode's), else the real one. */
function nowMs(o: TlsSecretOptions): number {
  return (o.now ?? Date.now)();
}

/** A self-signed certificate made by the operator is replaced this long before it expires. */
const RENEW_BEFORE_MS = 30 * 86_400_000;

async function generated(
  o: TlsSecretOptions,
  namespace: string,
): Promise<{ material: TlsMaterial; data: Record<string, string>; dnsNames: string[] }> {
  const dnsNames = [
    o.serviceName,
    `${o.serviceName}.${namespace}`,
    `${o.serviceName}.${namespace}.svc`,
    `${o.serviceName}.${namespace}.svc.cluster.local`,
    'localhost',
  ];
  const pems = await selfSignedCertificate({
    commonName: `${o.serviceName}.${namespace}.svc`,
    organization: 'acl-operator',
    dnsNames,
    ips: ['127.0.0.1'],
    now: new Date(nowMs(o)),
  });
  const b64 = (t: string): string => Buffer.from(t, 'utf8').toString('base64');
  return {
    material: { cert: pems.cert, key: pems.private, ca: pems.cert },
    data: { 'tls.crt': b64(pems.cert), 'tls.key': b64(pems.private), 'ca.crt': b64(pems.cert) },
    dnsNames,
  };
}

async function readOrCreate(o: TlsSecretOptions): Promise<TlsMaterial> {
  const { core, namespace, name, log } = o;
  for (let attempt = 1; attempt <= 3; attempt++) {
    let existing: V1Secret | undefined;
    try {
      existing = await core.readNamespacedSecret({ name, namespace });
    } catch (err) {
      if (statusOf(err) !== 404) throw new Error(`Failed to read TLS Secret ${namespace}/${name}: ${describeError(err)}`);
    }
    if (existing) {
      const found = decode(existing);
      if (typeof found === 'string') throw new Error(`TLS Secret ${namespace}/${name} cannot be used: ${found}`);
      // Ours (self-signed) and close to expiry: replaced. Anyone else's (cert-manager) is only read.
      const ours = existing.metadata?.labels?.[LABEL_MANAGED_BY] === MANAGED_BY;
      if (!ours || !expiresWithin(found.cert, RENEW_BEFORE_MS, new Date(nowMs(o)))) return found;
      const next = await generated(o, namespace);
      try {
        await core.replaceNamespacedSecret({ name, namespace, body: { ...existing, data: next.data } });
        log.info(
          { secret: `${namespace}/${name}`, expired: new X509Certificate(found.cert).validTo },
          'Renewed the self-signed TLS certificate of the API listener',
        );
        return next.material;
      } catch (err) {
        // 409: another replica renewed it first; read theirs.
        if (statusOf(err) !== 409) throw new Error(`Failed to renew TLS Secret ${namespace}/${name}: ${describeError(err)}`);
        continue;
      }
    }
    const next = await generated(o, namespace);
    try {
      await core.createNamespacedSecret({
        namespace,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'kubernetes.io/tls',
          metadata: { name, namespace, labels: { [LABEL_MANAGED_BY]: MANAGED_BY } },
          data: next.data,
        },
      });
      log.info({ secret: `${namespace}/${name}`, dnsNames: next.dnsNames }, 'Created a self-signed TLS certificate for the API listener');
      return next.material;
    } catch (err) {
      // 409: another replica created it first; read theirs.
      if (statusOf(err) !== 409) throw new Error(`Failed to create TLS Secret ${namespace}/${name}: ${describeError(err)}`);
    }
  }
  throw new Error(`TLS Secret ${namespace}/${name} kept changing while it was read`);
}

async function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, text, { mode });
  await rename(tmp, file);
}

/** Reads (or creates) the TLS Secret, writes its PEM files into `dir`, and re-reads it every refreshMs. */
export async function openTlsSecret(o: TlsSecretOptions): Promise<TlsSecret> {
  await mkdir(o.dir, { recursive: true });
  const files = { cert: join(o.dir, 'tls.crt'), key: join(o.dir, 'tls.key') };
  let current = await readOrCreate(o);
  await writeAtomically(files.key, current.key, 0o600);
  await writeAtomically(files.cert, current.cert, 0o644);
  const timer = setInterval(() => {
    readOrCreate(o)
      .then(async (next) => {
        if (next.cert === current.cert && next.key === current.key && next.ca === current.ca) return;
        const caChanged = next.ca !== current.ca;
        current = next;
        await writeAtomically(files.key, next.key, 0o600);
        await writeAtomically(files.cert, next.cert, 0o644);
        o.log.info({ secret: `${o.namespace}/${o.name}` }, 'The TLS Secret changed');
        if (caChanged) o.onCaChange?.(next.ca);
      })
      .catch((err: unknown) => o.log.error({ err }, 'Failed to re-read the TLS Secret; keeping the current certificate'));
  }, o.refreshMs ?? 60_000);
  timer.unref();
  return { files, ca: () => current.ca, stop: () => clearInterval(timer) };
}
