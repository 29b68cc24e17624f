// Install as docs/kubernetes.md tells users to, from a copy of the repository's crds/ and deploy/
// (the one thing adapted: a server without policy/v1 gets the PodDisruptionBudget as policy/v1beta1,
// and the run says so), then what a user checks: both replicas Ready, one leader, the caBundle.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { imageProblem } from './setup.ts';
import {
  exec,
  IMAGE,
  kubectl,
  kubectlJson,
  leaseHolder,
  metric,
  OPERATOR_NS,
  opsGet,
  readyOperators,
  run,
  runDocsBlock,
  say,
  waitFor,
} from './support.ts';

export function installTests(dir: () => string): void {
  it('installs with the commands of docs/kubernetes.md: both replicas Ready, one Lease holder, acl_leader on one', async () => {
    const watchImage = setInterval(() => {
      void imageProblem().then((p) => p && say(p));
    }, 5_000);
    const r = await runDocsBlock('## 1. Install', dir(), {}, 300_000).finally(() => clearInterval(watchImage));
    expect(r.code, `${r.stdout}\n${r.stderr}\n${(await imageProblem()) ?? ''}`).toBe(0);
    expect(r.stdout).toMatch(/successfully rolled out/);
    const ready = await waitFor(
      'two Ready operator pods',
      async () => {
        const p = await readyOperators();
        return p.length === 2 && p;
      },
      120_000,
    );
    expect(ready.every((p) => p.spec.containers[0]?.image.endsWith(IMAGE))).toBe(true);
    const names = ready.map((p) => p.metadata.name).sort();
    const holder = await waitFor(
      'a Lease holder among the pods',
      async () => {
        const h = await leaseHolder().catch(() => '');
        return names.includes(h) && h;
      },
      60_000,
    );
    const leaders = await Promise.all(names.map(async (n) => metric(await opsGet(n, '/metrics'), 'acl_leader')));
    expect(leaders).toEqual(names.map((n) => (n === holder ? 1 : 0)));
  });

  it("writes the webhook configuration's caBundle: the CA of the TLS Secret the replicas serve with", async () => {
    const ca = await waitFor(
      'the caBundle written by the leader',
      async () => {
        const out = await kubectl([
          'get',
          'validatingwebhookconfiguration',
          'acl-operator',
          '-o',
          'jsonpath={.webhooks[0].clientConfig.caBundle}',
        ]);
        return out.length > 0 && out;
      },
      60_000,
    );
    const secret = await kubectlJson<{ data: Record<string, string> }>(['-n', OPERATOR_NS, 'get', 'secret', 'acl-operator-tls']);
    expect(ca).toBe(secret.data['ca.crt']);
  });

  it('applies the opt-in NetworkPolicies of deploy/networkpolicy/ and reads them back as written (the rest of the tier runs under them)', async () => {
    await kubectl(['apply', '-f', 'deploy/networkpolicy/'], { cwd: dir() });
    type Np = { metadata: { name: string }; spec: { policyTypes?: string[]; ingress?: { ports?: { port?: number | string }[] }[] } };
    const { items } = await kubectlJson<{ items: Np[] }>(['-n', OPERATOR_NS, 'get', 'networkpolicy']);
    const text = readFileSync(join(dir(), 'deploy', 'networkpolicy', 'networkpolicy.yaml'), 'utf8');
    const written = [...text.matchAll(/^kind: NetworkPolicy\nmetadata:\n {2}name: (\S+)/gm)].map((m) => m[1]).sort();
    expect(items.map((i) => i.metadata.name).sort()).toEqual(written);
    const ports = items.flatMap((i) => (i.spec.ingress ?? []).flatMap((r) => (r.ports ?? []).map((p) => String(p.port)))).sort();
    expect(ports).toEqual(expect.arrayContaining(['8443', '9090']));
    say("NetworkPolicies applied and read back; whether they are enforced depends on the network plugin (local-kube's bridge does not)");
  });

  it('runs as the restricted profile demands, checked inside each running pod', async () => {
    for (const p of await readyOperators()) {
      const name = p.metadata.name;
      expect((await exec(OPERATOR_NS, name, 'operator', ['id', '-u'])).trim()).toBe('1000');
      expect((await exec(OPERATOR_NS, name, 'operator', ['id', '-g'])).trim()).toBe('1000');
      const status = await exec(OPERATOR_NS, name, 'operator', ['cat', '/proc/1/status']);
      const field = (k: string) => new RegExp(`^${k}:\\s*(\\S+)`, 'm').exec(status)?.[1];
      // No capability in any set, no way to gain one, and the runtime's default seccomp filter (2).
      expect({
        CapEff: field('CapEff'),
        CapPrm: field('CapPrm'),
        CapBnd: field('CapBnd'),
        NoNewPrivs: field('NoNewPrivs'),
        Seccomp: field('Seccomp'),
      }).toEqual({
        CapEff: '0000000000000000',
        CapPrm: '0000000000000000',
        CapBnd: '0000000000000000',
        NoNewPrivs: '1',
        Seccomp: '2',
      });
      const root = await run('kubectl', ['-n', OPERATOR_NS, 'exec', name, '-c', 'operator', '--', 'touch', '/app/written']);
      expect(root.code).not.toBe(0);
      expect(root.stderr).toMatch(/Read-only file system/);
      await exec(OPERATOR_NS, name, 'operator', ['touch', '/tmp/written']);
    }
  });
}
