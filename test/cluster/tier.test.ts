// The cluster tier (make test-cluster): acl-operator as cluster admins run it, in real pods, on a
// cluster whose node runs them (CLUSTER_KUBECONFIG: kind, or ../shared/tools/local-kube up --node),
// with the image `make image` built loaded into the node under acl-operator:dev and acl-operator:dev-next.
// One file, in order: each step builds on the last (install, tenant, disruptions, sizing, uninstall).
// It takes the cluster for itself: whatever a previous run left is removed first.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe } from 'vitest';
import { disruptionTests } from './disruptions.ts';
import { installTests } from './install.ts';
import { adaptForServer, cleanSlate, prepareInstallFolder } from './setup.ts';
import { signingTests } from './signing.ts';
import { sizingTests } from './sizing.ts';
import { CLUSTER_KUBECONFIG, kubectl, say } from './support.ts';
import { tenantTests } from './tenant.ts';
import { uninstallTests } from './uninstall.ts';

describe.skipIf(!CLUSTER_KUBECONFIG)('acl-operator in real pods (CLUSTER_KUBECONFIG)', () => {
  let dir = '';
  const started = Date.now();
  beforeAll(async () => {
    dir = prepareInstallFolder();
    const version = JSON.parse(await kubectl(['version', '-o', 'json'])) as { serverVersion?: { gitVersion?: string } };
    say(`cluster: Kubernetes ${version.serverVersion?.gitVersion ?? 'unknown'}; commands run from ${dir} (crds/ and a copy of deploy/)`);
    await adaptForServer(dir);
    await cleanSlate(dir);
  }, 900_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    say(`the tier took ${((Date.now() - started) / 1000).toFixed(0)} s`);
  });

  describe('install', () => installTests(() => dir));
  describe('the first tenant', () => tenantTests(() => dir));
  describe('signed bundles and key rotation', () => signingTests());
  describe('failover and upgrades under load', () => disruptionTests(() => dir));
  describe('sizing', () => sizingTests());
  describe('uninstall', () => uninstallTests(() => dir));
});
