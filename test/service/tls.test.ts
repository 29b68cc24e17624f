import { copyFile, mkdtemp } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureSelfSigned } from '../../src/tls/index.ts';
import { startTestService, type TestService } from '../support/service.ts';

let t: TestService | undefined;
afterAll(async () => {
  await t?.stop();
});

/** The fingerprint of the certificate the server presents. */
function servedFingerprint(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path: '/healthz', rejectUnauthorized: false, agent: false }, (res) => {
      resolve(
        res.socket && 'getPeerCertificate' in res.socket
          ? (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256
          : '',
      );
      res.resume();
    });
    req.on('error', reject);
    req.end();
  });
}

describe('TLS from certificate files', () => {
  it('reloads the certificate when the files change', async () => {
    const root = await mkdtemp(join(tmpdir(), 'acl-tls-'));
    const log = pino({ level: 'silent' });
    const first = await ensureSelfSigned(join(root, 'first'), log);
    const second = await ensureSelfSigned(join(root, 'second'), log);
    const live = join(root, 'live');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(live);
    await copyFile(first.cert, join(live, 'tls.crt'));
    await copyFile(first.key, join(live, 'tls.key'));
    t = await startTestService({ tls: { mode: 'files', cert: join(live, 'tls.crt'), key: join(live, 'tls.key') } });
    const before = await servedFingerprint(t.service.apiUrl);
    await copyFile(second.key, join(live, 'tls.key'));
    await copyFile(second.cert, join(live, 'tls.crt'));
    await expect.poll(() => servedFingerprint(t?.service.apiUrl ?? ''), { timeout: 5000, interval: 50 }).not.toBe(before);
  });
});
