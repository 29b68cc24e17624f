// Setting the cluster up for the tier and the cluster benchmark (no test framework here): a folder
// with crds/ and a copy of deploy/ to run the docs' commands from, adapted to an old server, and a
// clean slate.
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMAGE, kubectl, OPERATOR_NS, OPERATOR_SELECTOR, pods, ROOT, run, say, waitFor } from './support.ts';

/** Where the tier runs the docs' commands from: crds/ (linked) and a copy of deploy/. */
export function prepareInstallFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'acl-cluster-tier-'));
  symlinkSync(join(ROOT, 'crds'), join(dir, 'crds'));
  cpSync(join(ROOT, 'deploy'), join(dir, 'deploy'), { recursive: true });
  return dir;
}

/** A server older than 1.21 has no policy/v1: the copy's PodDisruptionBudget becomes policy/v1beta1. */
export async function adaptForServer(dir: string): Promise<void> {
  const versions = (await kubectl(['api-versions'])).split('\n');
  if (versions.includes('policy/v1')) return;
  const file = join(dir, 'deploy', '50-pdb.yaml');
  const text = readFileSync(file, 'utf8');
  if (!text.includes('apiVersion: policy/v1\n')) throw new Error('deploy/50-pdb.yaml no longer says apiVersion: policy/v1');
  writeFileSync(file, text.replace('apiVersion: policy/v1\n', 'apiVersion: policy/v1beta1\n'));
  say(
    'this API server has no policy/v1 (Kubernetes < 1.21): deploy/50-pdb.yaml is applied as policy/v1beta1 here; users on 1.21+ apply it as shipped',
  );
}

/** Whatever a previous run left (it may have stopped midway): every object the tier creates, gone. */
export async function cleanSlate(dir: string): Promise<void> {
  await run('kubectl', ['delete', 'namespace', '-l', 'acl-cluster-tier=true', '--ignore-not-found', '--wait=true'], { timeoutMs: 300_000 });
  await run('kubectl', ['delete', '-f', 'deploy/examples/opa-sidecar.yaml', '--ignore-not-found', '--wait=true'], {
    cwd: dir,
    timeoutMs: 300_000,
  });
  await run('kubectl', ['delete', '-f', 'deploy/', '--ignore-not-found', '--wait=true'], { cwd: dir, timeoutMs: 300_000 });
  await run('kubectl', ['delete', '-f', 'crds/', '--ignore-not-found', '--wait=true'], { cwd: dir, timeoutMs: 300_000 });
  // A namespace being deleted refuses new content: wait until both are gone.
  await waitFor(
    'namespaces acl-system and shop gone',
    async () => (await run('kubectl', ['get', 'namespace', OPERATOR_NS, 'shop', '--ignore-not-found', '-o', 'name'])).stdout.trim() === '',
    300_000,
    1_000,
  );
}

/** Fails at once, with what to do, when the node cannot run the image (not loaded, say). */
export async function imageProblem(): Promise<string | undefined> {
  for (const p of await pods(OPERATOR_NS, OPERATOR_SELECTOR)) {
    const waiting = (p.status as { containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[] })
      .containerStatuses?.[0]?.state?.waiting;
    if (waiting?.reason && /ImagePull|ErrImageNeverPull|InvalidImageName/.test(waiting.reason)) {
      return `${p.metadata.name}: ${waiting.reason} (${waiting.message ?? ''}). Build and load ${IMAGE} first: make cluster-up (local-kube), or make image and kind load docker-image ${IMAGE}`;
    }
  }
  return undefined;
}
