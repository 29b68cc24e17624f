// Hostile uploads against a real service process (issue 23), for test/timing/receivers.test.ts and bench/flood.ts: the
// service started as `acl-operator serve` with the Deployment's own NODE_OPTIONS (its heap flag,
// read from deploy/30-deployment.yaml), decisions timed by a prober in a process of its own, and
// floods of 1, 4 and 16 gzip uploads in parallel that inflate to JSON nested two million deep or a
// million wide. With taskset and two cores the service runs on core 0, the prober on core 1.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parseAllDocuments } from 'yaml';
import { API_KEY, BASE_MANIFESTS } from './service.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** What the Deployment gives a replica: its NODE_OPTIONS and the pod's memory limit. */
export interface DeploymentLimits {
  readonly nodeOptions: string;
  readonly memoryLimitBytes: number;
}

const UNITS: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

/** Reads deploy/30-deployment.yaml: the operator container's NODE_OPTIONS and limits.memory. */
export function deploymentLimits(): DeploymentLimits {
  const docs = parseAllDocuments(readFileSync(join(ROOT, 'deploy', '30-deployment.yaml'), 'utf8')).map((d) => d.toJS() as unknown);
  type Container = { env?: { name: string; value?: string }[]; resources?: { limits?: { memory?: string } } };
  const deployment = docs.find((d) => (d as { kind?: string }).kind === 'Deployment') as
    | { spec: { template: { spec: { containers: Container[] } } } }
    | undefined;
  const container = deployment?.spec.template.spec.containers[0];
  const nodeOptions = container?.env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
  const memory = /^(\d+)(Ki|Mi|Gi)$/.exec(container?.resources?.limits?.memory ?? '');
  if (!nodeOptions || !memory) throw new Error('deploy/30-deployment.yaml: no NODE_OPTIONS or limits.memory on the operator container');
  return { nodeOptions, memoryLimitBytes: Number(memory[1]) * (UNITS[memory[2] as string] as number) };
}

/** `taskset -c <core>` in front when there are two cores and taskset (util-linux). */
function pinnedCommand(core: number, command: string, args: readonly string[]): [string, string[]] {
  try {
    if (availableParallelism() >= 2) {
      execFileSync('taskset', ['-V'], { stdio: 'ignore' });
      return ['taskset', ['-c', String(core), command, ...args]];
    }
  } catch {
    // No taskset: not pinned.
  }
  return [command, [...args]];
}

/** Whether the service and the prober get a core each. */
export const PINNED = pinnedCommand(0, 'x', [])[0] === 'taskset';

const kib = (field: string, status: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN) * 1024;

export interface ServiceProcess {
  readonly apiUrl: string;
  readonly token: string;
  /** Resident memory now, and its peak since the start (VmRSS, VmHWM). */
  memory(): Promise<{ rssBytes: number; peakBytes: number }>;
  /** Whether it still runs, and if not how it ended. */
  ended(): string | undefined;
  stop(): Promise<void>;
}

/** Starts `acl-operator serve` on BASE_MANIFESTS (plain HTTP, port 0) with these NODE_OPTIONS, pinned to core 0. */
export async function startServiceProcess(nodeOptions: string): Promise<ServiceProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'acl-flood-'));
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  for (const [file, text] of Object.entries(BASE_MANIFESTS)) await writeFile(join(manifests, file), text);
  const args = ['src/cli.ts', 'serve', '--manifests', manifests, '--state-dir', join(dir, 'state'), '--insecure-http'];
  const listeners = ['--listen', '127.0.0.1:0', '--ops-listen', '127.0.0.1:0', '--console-listen', '', '--log-level', 'warn'];
  const [command, argv] = pinnedCommand(0, process.execPath, [...args, ...listeners]);
  const child = spawn(command, argv, { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: nodeOptions }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let end: string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      end = `exited (${signal ?? code}): ${output.slice(-2000)}`;
      resolve();
    }),
  );
  const banner = await new Promise<string>((resolve, reject) => {
    const take = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.includes('Status like kubectl get')) resolve(output);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    void exited.then(() => reject(new Error(`the service ${end}`)));
  });
  const apiUrl = /API +(http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1];
  if (!apiUrl) throw new Error(`no API URL in the banner: ${banner}`);
  const token = (await readFile(join(dir, 'state', 'tokens', 'acme', 'gateways'), 'utf8')).trim();
  return {
    apiUrl,
    token,
    async memory() {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      return { rssBytes: kib('VmRSS', status), peakBytes: kib('VmHWM', status) };
    },
    ended: () => end,
    async stop() {
      if (end === undefined) child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface Prober {
  /** Starts timing (earlier samples dropped). */
  start(): void;
  /** The samples so far, once there are at least `n` (timing goes on). */
  atLeast(n: number): Promise<number[]>;
  /** Stops timing: the samples since start. */
  stop(): Promise<number[]>;
  close(): void;
}

/** Forks test/support/prober.ts, pinned to core 1. */
export async function startProber(apiUrl: string): Promise<Prober> {
  const script = join(import.meta.dirname, 'prober.ts');
  const [command, argv] = pinnedCommand(1, process.execPath, []);
  const child: ChildProcess = fork(script, [apiUrl, API_KEY], {
    execPath: command,
    execArgv: command === 'taskset' ? [...argv] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  type Message = { ready?: true; samples?: number[]; error?: string };
  const next = (): Promise<number[]> =>
    new Promise((resolve, reject) => {
      child.once('message', (m: Message) => (m.samples ? resolve(m.samples) : reject(new Error(`prober: ${m.error ?? 'no samples'}`))));
    });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the prober exited (${code})`)));
  });
  return {
    start: () => child.send({ start: true }),
    atLeast(n) {
      const answer = next();
      child.send({ count: n });
      return answer;
    },
    stop() {
      const answer = next();
      child.send({ stop: true });
      return answer;
    },
    close: () => child.disconnect(),
  };
}

/**
 * The finding's bodies: 3.9 KB of gzip that inflate to 4,000,000 bytes of nesting, and a million
 * empty arrays in one; and 16 of 40 KB made to be slow to parse (1,023 objects whose 4 keys no other
 * object, and no other of the 16, has: 2 to 5 ms of JSON.parse each, V8 keeping no shape of an
 * earlier one), which the event loop must not parse either.
 */
export const HOSTILE = {
  deep: gzipSync(`${'['.repeat(2_000_000)}${']'.repeat(2_000_000)}`),
  wide: gzipSync(`[${'[],'.repeat(1_000_000)}[]]`),
  slow: Array.from({ length: 16 }, (_, v) =>
    gzipSync(`[${Array.from({ length: 1023 }, (_, i) => `{"a${v}_${i}":0,"b${v}_${i}":0,"c${v}_${i}":0,"d${v}_${i}":0}`).join(',')}]`),
  ),
} as const;

/** The n-th hostile body: deep, wide and slow in turn (a different slow one each time). */
const hostileBody = (n: number): Buffer => {
  const shape = n % 3;
  return shape === 0 ? HOSTILE.deep : shape === 1 ? HOSTILE.wide : (HOSTILE.slow[Math.floor(n / 3) % HOSTILE.slow.length] as Buffer);
};

/** Sends `parallel` hostile uploads at once (status and logs, deep, wide and slow in turn); their statuses. */
export async function floodOnce(service: ServiceProcess, parallel: number, offset = 0): Promise<number[]> {
  return Promise.all(
    Array.from({ length: parallel }, async (_, i) => {
      const n = offset + i;
      const res = await fetch(`${service.apiUrl}/acme/connectors/policyagent/gateways/${n % 2 === 0 ? 'status' : 'logs'}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', Authorization: `Bearer ${service.token}` },
        body: hostileBody(Math.floor(n / 2)),
      }).catch(() => undefined);
      // 0: no answer (the connection failed; the caller sees whether the service ended).
      if (res === undefined) return 0;
      await res.arrayBuffer();
      return res.status;
    }),
  );
}

export interface Latency {
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

function latency(samples: readonly number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { samples: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted.at(-1) ?? NaN };
}

export interface FloodStage {
  readonly parallel: number;
  /** 1, or more when the stage was run again (FloodPlan.again). */
  readonly attempt: number;
  readonly uploads: number;
  /** How long the stage sent them. */
  readonly durationMs: number;
  /** Answers by HTTP status. */
  readonly statuses: Readonly<Record<string, number>>;
  /** A valid status report sent with each wave: its answers by HTTP status. */
  readonly valid: Readonly<Record<string, number>>;
  readonly latency: Latency;
}

export interface FloodFigures {
  readonly quiet: Latency;
  readonly stages: readonly FloodStage[];
  /** Resident memory after the warm-up, its peak over the whole run (start-up included), and after the floods. */
  readonly memory: { readonly startBytes: number; readonly peakBytes: number; readonly afterBytes: number };
}

export interface FloodPlan {
  /** Uploads sent at once, one stage each (1, 4, 16 in the finding). */
  readonly stages: readonly number[];
  /** Each stage sends its uploads again and again until this many decisions were timed (and at least `waves` times)... */
  readonly samplesPerStage: number;
  /** ...or until this long has passed (a service that holds decisions for seconds times few of them). */
  readonly stageBudgetMs: number;
  readonly waves: number;
  /** Decisions timed with nothing else going on (the baseline). */
  readonly quietSamples: number;
  /** After the floods, memory is read until it is within this of the start, or `settleMs` pass. */
  readonly settleBytes: number;
  readonly settleMs: number;
  /**
   * A stage whose slowest decision took longer than `overMs` is run again, up to `times` more times,
   * every attempt kept: on a shared machine another process can hold a core for that long once, while
   * what the service does under a flood repeats every time.
   */
  readonly again?: { readonly overMs: number; readonly times: number };
  readonly progress?: (line: string) => void;
}

const OK_UPLOADS = {
  status: JSON.stringify({ labels: { id: 'warm-up', version: '1.1.0' }, bundles: { docs: { active_revision: '1' } } }),
  logs: gzipSync(JSON.stringify([{ labels: { id: 'warm-up' }, decision_id: 'w', path: 'acl/allow', result: true }])),
};

/** Warm-up, the quiet baseline, then each stage's floods with decisions timed throughout. */
export async function measureFloods(service: ServiceProcess, prober: Prober, plan: FloodPlan): Promise<FloodFigures> {
  const progress = plan.progress ?? (() => undefined);
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${service.token}` };
  const base = `${service.apiUrl}/acme/connectors/policyagent/gateways`;
  progress('warming up: decisions, an upload of each kind, a hostile one of each kind');
  prober.start();
  for (const res of [
    await fetch(`${base}/status`, { method: 'POST', headers, body: OK_UPLOADS.status }),
    await fetch(`${base}/logs`, { method: 'POST', headers: { ...headers, 'Content-Encoding': 'gzip' }, body: OK_UPLOADS.logs }),
  ])
    if (res.status !== 200) throw new Error(`a valid upload was answered ${res.status}: ${await res.text()}`);
  await floodOnce(service, 4);
  await prober.atLeast(200);
  await prober.stop();
  const startBytes = (await service.memory()).rssBytes;

  progress(`quiet: ${plan.quietSamples} decisions`);
  prober.start();
  await prober.atLeast(plan.quietSamples);
  const quiet = latency(await prober.stop());

  const stages: FloodStage[] = [];
  const tally = (into: Record<string, number>, status: number): void => {
    into[status] = (into[status] ?? 0) + 1;
  };
  const runStage = async (parallel: number, attempt: number): Promise<FloodStage> => {
    progress(`flood: ${parallel} hostile uploads at once, again and again until ${plan.samplesPerStage} decisions were timed`);
    prober.start();
    const startedMs = performance.now();
    let timed = false;
    void prober.atLeast(plan.samplesPerStage).then(() => {
      timed = true;
    });
    const statuses: Record<string, number> = {};
    const valid: Record<string, number> = {};
    let waves = 0;
    for (; (!timed || waves < plan.waves) && performance.now() - startedMs < plan.stageBudgetMs; waves++) {
      const report = fetch(`${base}/status`, { method: 'POST', headers, body: OK_UPLOADS.status }).then(
        async (res) => {
          await res.arrayBuffer();
          return res.status;
        },
        () => 0,
      );
      for (const s of await floodOnce(service, parallel, waves * parallel)) tally(statuses, s);
      tally(valid, await report);
      if (service.ended() !== undefined) throw new Error(`the service ${service.ended() ?? ''}`);
    }
    const durationMs = performance.now() - startedMs;
    return { parallel, attempt, uploads: parallel * waves, durationMs, statuses, valid, latency: latency(await prober.stop()) };
  };
  for (const parallel of plan.stages) {
    for (let attempt = 1; ; attempt++) {
      const stage = await runStage(parallel, attempt);
      stages.push(stage);
      if (plan.again === undefined || stage.latency.maxMs <= plan.again.overMs || attempt > plan.again.times) break;
    }
  }

  progress('after: waiting for the resident memory to come back near the start');
  const deadline = performance.now() + plan.settleMs;
  let now = await service.memory();
  while (now.rssBytes > startBytes + plan.settleBytes && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    now = await service.memory();
  }
  return { quiet, stages, memory: { startBytes, peakBytes: now.peakBytes, afterBytes: now.rssBytes } };
}

const ms = (n: number): string => `${n.toFixed(1)} ms`;
const statusList = (statuses: Readonly<Record<string, number>>): string =>
  Object.entries(statuses)
    .map(([code, n]) => `${code}×${n}`)
    .join(' ');
const mib = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`;

/** The figures as the test and the benchmark print them: each flood's decisions beside the quiet run's. */
export function floodLines(f: FloodFigures, limits: DeploymentLimits): string[] {
  const row = (label: string, l: Latency, extra = ''): string =>
    `| ${label} | ${l.samples} | ${ms(l.p50Ms)} | ${ms(l.p99Ms)} | ${ms(l.maxMs)} | ${(l.maxMs / f.quiet.maxMs).toFixed(2)} |${extra}`;
  return [
    `service: acl-operator serve with NODE_OPTIONS=${limits.nodeOptions} (deploy/30-deployment.yaml)${PINNED ? ', on core 0; decisions timed from core 1' : ' (not pinned: no taskset or one core)'}`,
    '| run | decisions | p50 | p99 | max | max × quiet | hostile uploads answered | a second | valid reports answered |',
    '|---|---|---|---|---|---|---|---|---|',
    `${row('quiet', f.quiet)} | | | |`,
    ...f.stages.map((s) =>
      row(
        `${s.parallel} hostile upload(s) at once${s.attempt > 1 ? ` (attempt ${s.attempt})` : ''}`,
        s.latency,
        ` ${statusList(s.statuses)} | ${Math.round((s.uploads * 1000) / s.durationMs)} | ${statusList(s.valid)} |`,
      ),
    ),
    `resident memory: ${mib(f.memory.startBytes)} after the warm-up, peak ${mib(f.memory.peakBytes)} (pod limit ${mib(limits.memoryLimitBytes)}), ${mib(f.memory.afterBytes)} after the floods`,
  ];
}
