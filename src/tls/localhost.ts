// The standalone API listener's certificate when none is given: a self-signed one for localhost,
// kept in a folder so that clients trust the same file across restarts, and renewed in its last week.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { expiresWithin, selfSignedCertificate } from './certificate.ts';

/** A certificate this close to its end is made again at start. */
const RENEW_WITHIN_MS = 7 * 86_400_000;

/** A self-signed certificate for localhost, 127.0.0.1 and ::1, made once and kept in `<dir>`. */
export async function ensureSelfSigned(dir: string, log: Logger, now = new Date()): Promise<{ cert: string; key: string }> {
  const cert = join(dir, 'tls.crt');
  const key = join(dir, 'tls.key');
  try {
    const pem = await readFile(cert, 'utf8');
    await readFile(key, 'utf8');
    if (!expiresWithin(pem, RENEW_WITHIN_MS, now)) return { cert, key };
    log.info({ cert }, 'Renewing the self-signed certificate: it expires within a week');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const pems = await selfSignedCertificate({
    commonName: 'localhost',
    organization: 'acl-operator standalone',
    dnsNames: ['localhost'],
    ips: ['127.0.0.1', '::1'],
    now,
  });
  await mkdir(dir, { recursive: true });
  await writeFile(key, pems.private, { mode: 0o600 });
  await writeFile(cert, pems.cert, { mode: 0o644 });
  log.info({ cert }, 'Generated a self-signed certificate for localhost');
  return { cert, key };
}
