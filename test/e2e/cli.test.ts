// `acl-operator serve` as a process in Kubernetes mode, the way the Deployment runs it: flags, the
// TLS Secret, readiness, serving, and a SIGTERM that releases the Lease for the next replica.
import { spawn } from 'node:child_process';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { adminClients, customApi, E2E_KUBECONFIG, loadConfig, ROOT, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function httpsStatus(url: string, ca: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describeE2E('acl-operator serve in Kubernetes mode (real API server)', { timeout: 120_000 }, (e2e) => {
  it('starts, becomes ready, serves over TLS from its Secret, and releases the Lease on SIGTERM', async () => {
    const t = await e2e.tenant('cli', docsTenant);
    const ns = t.ns;
    const [api, ops] = [await freePort(), await freePort()];
    let output = '';
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'src', 'cli.ts'),
        'serve',
        '--kubeconfig',
        E2E_KUBECONFIG ?? '',
        '--namespaces',
        ns,
        '--operator-namespace',
        ns,
        '--tls-secret',
        'acl-operator-tls',
        '--listen',
        `127.0.0.1:${api}`,
        '--ops-listen',
        `127.0.0.1:${ops}`,
        '--console-listen',
        '127.0.0.1:0',
        '--state-dir',
        join(tmpdir(), 'acl-operator-e2e', ns, 'cli'),
        '--identity',
        'cli-test',
        '--log-level',
        'info',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    e2e.later(() => child.kill('SIGKILL'));
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

    await waitFor(
      '/readyz 200',
      async () => (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => undefined))?.status === 200,
      60_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${output}`);
    });
    const tls = await adminClients().core.readNamespacedSecret({ name: 'acl-operator-tls', namespace: ns });
    const ca = Buffer.from(tls.data?.['ca.crt'] ?? '', 'base64').toString('utf8');
    const token = await t.token();
    expect(await httpsStatus(`https://localhost:${api}/${ns}/connectors/policyagent/gateways/bundles/docs`, ca, token)).toBe(200);
    expect(await customApi(ns).status('Bundle', 'docs')).toMatchObject({ revision: 1 });
    const metrics = await (await fetch(`http://127.0.0.1:${ops}/metrics`)).text();
    expect(metrics).toMatch(/^acl_leader 1$/m);
    expect(output).toContain('"msg":"Serving"');
    expect(output).not.toContain(token);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lease = await loadConfig().makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'acl-operator', namespace: ns });
    expect(lease.spec?.holderIdentity ?? '').toBe('');
  });
});
