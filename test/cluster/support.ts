// The cluster tier's helpers: kubectl as a user runs it (against CLUSTER_KUBECONFIG, a cluster whose
// node runs pods), the docs' shell blocks run verbatim, and what the tier had to adapt, printed.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { waitFor as poll } from '../support/kube.ts';

/** The e2e tiers' poll (test/support/kube.ts), every 500 ms by default: each probe here runs kubectl. */
export const waitFor = <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 500): Promise<T> =>
  poll(what, probe, timeoutMs, everyMs);
export const CLUSTER_KUBECONFIG = process.env['CLUSTER_KUBECONFIG'] || undefined;
export const ROOT = join(import.meta.dirname, '..', '..');
/** The image deploy/30-deployment.yaml runs, built by `make image` and loaded into the node. */
export const IMAGE = process.env['CLUSTER_IMAGE'] || 'acl-operator:dev';
/** The same build under another tag, loaded too: the "new version" of the upgrade. */
export const IMAGE_NEXT = process.env['CLUSTER_IMAGE_NEXT'] || 'acl-operator:dev-next';
export const OPERATOR_NS = 'acl-system';
export const OPERATOR_SELECTOR = 'app.kubernetes.io/name=acl-operator';

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program with KUBECONFIG set to the cluster's; never throws on its exit status. */
export function run(program: string, args: readonly string[], o: { input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: o.cwd ?? ROOT,
      env: { ...process.env, KUBECONFIG: CLUSTER_KUBECONFIG ?? '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 300_000);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
    child.stdin.end(o.input ?? '');
  });
}

/** kubectl; throws with its stderr unless it exits 0. */
export async function kubectl(args: readonly string[], o: { input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  const r = await run('kubectl', args, o);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}

/** kubectl ... -o json, parsed. */
export async function kubectlJson<T>(args: readonly string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, '-o', 'json'])) as T;
}

/** What the tier did that a user on a current cluster would not: printed, so a run's output says so. */
export function say(line: string): void {
  process.stdout.write(`[cluster tier] ${line}\n`);
}

export interface Pod {
  metadata: { name: string; uid: string; deletionTimestamp?: string; labels?: Record<string, string> };
  spec: { containers: { name: string; image: string }[] };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: {
      name: string;
      ready: boolean;
      restartCount: number;
      image: string;
      lastState?: { terminated?: { reason?: string } };
    }[];
  };
}

export async function pods(namespace: string, selector: string): Promise<Pod[]> {
  return (await kubectlJson<{ items: Pod[] }>(['-n', namespace, 'get', 'pods', '-l', selector])).items;
}

export const isReady = (p: Pod): boolean =>
  !p.metadata.deletionTimestamp && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** The operator's pods that are Ready and not terminating. */
export async function readyOperators(): Promise<Pod[]> {
  return (await pods(OPERATOR_NS, OPERATOR_SELECTOR)).filter(isReady);
}

/** The Lease's holder (a pod name), or '' when none holds it. */
export async function leaseHolder(): Promise<string> {
  const lease = await kubectlJson<{ spec?: { holderIdentity?: string } }>(['-n', OPERATOR_NS, 'get', 'lease', 'acl-operator']);
  return lease.spec?.holderIdentity ?? '';
}

/** Runs a command in a pod's container (kubectl exec); throws unless it exits 0. */
export function exec(namespace: string, pod: string, container: string, command: readonly string[]): Promise<string> {
  return kubectl(['-n', namespace, 'exec', pod, '-c', container, '--', ...command]);
}

/** GET on the operator pod's ops listener, from inside the pod (its image has Node, not curl). */
export function opsGet(pod: string, path: string): Promise<string> {
  const script = `fetch('http://127.0.0.1:9090${path}').then(r => r.text()).then(t => process.stdout.write(t))`;
  return exec(OPERATOR_NS, pod, 'operator', ['node', '-e', script]);
}

/** One metric's value from a Prometheus text page, with every given label matching. */
export function metric(page: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of page.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return undefined;
}

/**
 * The first ```bash block after a line of docs/kubernetes.md starting with `heading`, as a user would paste it. Only the
 * given placeholders are replaced (an image name of the docs by the one loaded into the node).
 */
export function docsBlock(heading: string, replace: Record<string, string> = {}): string {
  const text = readFileSync(join(ROOT, 'docs', 'kubernetes.md'), 'utf8');
  const at = text.indexOf(`\n${heading}`);
  if (at < 0) throw new Error(`docs/kubernetes.md has no line starting "${heading}"`);
  const block = /```bash\n([\s\S]*?)```/.exec(text.slice(at));
  if (!block?.[1]) throw new Error(`docs/kubernetes.md has no bash block under "${heading}"`);
  let script = block[1];
  for (const [from, to] of Object.entries(replace)) {
    if (!script.includes(from)) throw new Error(`the block under "${heading}" no longer says ${from}`);
    script = script.split(from).join(to);
  }
  return script;
}

/** Runs a docs block in bash, stopping at the first failing command, from `cwd`. */
export async function runDocsBlock(heading: string, cwd: string, replace: Record<string, string> = {}, timeoutMs = 300_000): Promise<Run> {
  const script = docsBlock(heading, replace);
  say(
    `running the commands of docs/kubernetes.md "${heading}" verbatim${
      Object.keys(replace).length
        ? ` (with ${Object.entries(replace)
            .map(([a, b]) => `${a} -> ${b}`)
            .join(', ')})`
        : ''
    }`,
  );
  return run('bash', ['-e', '-c', script], { cwd, timeoutMs });
}

/** The operator's pods, whatever their state (a terminating one included). */
export async function operatorPodCount(): Promise<number> {
  return (await kubectl(['-n', OPERATOR_NS, 'get', 'pods', '-l', OPERATOR_SELECTOR, '-o', 'name'])).trim().split('\n').filter(Boolean)
    .length;
}
