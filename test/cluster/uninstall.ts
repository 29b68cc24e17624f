// Uninstall with the commands of docs/kubernetes.md: nothing of the operator is left in the cluster.
import { expect, it } from 'vitest';
import { SIZING_NAMESPACES } from './workload.ts';
import { kubectl, run, runDocsBlock, say } from './support.ts';

export function uninstallTests(dir: () => string): void {
  it('uninstalls with the commands of docs/kubernetes.md, leaving no CRD, namespace, webhook, role or pod of ours', async () => {
    const t0 = Date.now();
    const r = await runDocsBlock('### Uninstall', dir(), {}, 600_000);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    say(`uninstall took ${((Date.now() - t0) / 1000).toFixed(0)} s (with ${SIZING_NAMESPACES} tenants of the sizing test still present)`);
    const crds = await kubectl(['get', 'crd', '-o', 'name']);
    expect(crds).not.toMatch(/acl\.policyagent\.dev/);
    for (const [kind, name] of [
      ['namespace', 'acl-system'],
      ['namespace', 'shop'],
      ['validatingwebhookconfiguration', 'acl-operator'],
      ['clusterrole', 'acl-operator'],
      ['clusterrole', 'acl-operator-webhook'],
      ['clusterrolebinding', 'acl-operator'],
    ] as const) {
      const got = await run('kubectl', ['get', kind, name]);
      expect({ kind, name, found: got.code === 0 }).toEqual({ kind, name, found: false });
    }
    // The sizing tenants' namespaces are the tier's own (labelled): removed after the check above.
    await run('kubectl', ['delete', 'namespace', '-l', 'acl-cluster-tier=true', '--wait=false']);
  });
}
