// BENCH_BASELINE=<another checkout of this repository>: that checkout's own
// bench/http/servers/service.ts, with 10 and with 10,000 rules, pinned like ours, measured on the
// decision paths (POST /authorization, AuthZEN) and the 304 path in the same rotated rounds as this
// tree's service, so a refactor is judged by ratios taken in one run. The other checkout is code we
// do not control: what it reports is parsed, every wait on it is bounded, and a mismatch is a reason
// printed before any measurement.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { SERVER_CORE } from './cores.ts';
import { spawnPinned } from './ipc.ts';
import type { HttpRequest } from './load.ts';
import type { Variant } from './rounds.ts';
import { BUNDLE_PATH, type DecisionBody } from './tenant.ts';
import { decisionRequest, SERVER_FLAGS, type Fleet } from './variants.ts';

/** The baseline's server script, relative to its checkout. */
const SCRIPT = 'bench/http/servers/service.ts';
/** The 10,000-rule service starts in about 10 s on a quiet machine; far longer means it never will. */
const READY_TIMEOUT_MS = 300_000;
const CALL_TIMEOUT_MS = 15_000;

/** What we need of the baseline's ready message and `stats` reply (bench/http/servers/service.ts, stats.ts). */
const BaselineReady = z.object({ port: z.number().int().positive(), token: z.string().min(1), startMs: z.number().optional() });
const BaselineStats = z.object({ cpuUs: z.number().nonnegative() });

type BaselineCommands = { stats: { arg: null; result: unknown } };

export interface BaselineService {
  readonly pid: number;
  readonly port: number;
  readonly token: string;
  /** As the baseline reports it; both of its services start at once. */
  readonly startMs: number | undefined;
  /** CPU time of the baseline's server process so far, µs. */
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

export interface Baseline {
  readonly root: string;
  /** Its commit, as `describeCheckout` says it. */
  readonly checkout: string;
  readonly small: BaselineService;
  readonly large: BaselineService;
  /** The ETag of the baseline's bundle (10 rules), for its own 304 runs. */
  readonly etag: string;
  stop(): Promise<void>;
}

export type BaselineStart = { readonly ok: true; readonly baseline: Baseline } | { readonly ok: false; readonly problem: string };

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s: ${what}`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** "commit abc1234", "commit abc1234 with uncommitted changes", or why there is none. */
export function describeCheckout(root: string): string {
  try {
    const git = (...args: string[]): string => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    return `commit ${git('rev-parse', '--short', 'HEAD')}${dirty ? ' with uncommitted changes' : ''}`;
  } catch {
    return 'not a git checkout';
  }
}

/** One baseline service, ready, speaking the protocol we need (a `stats` call is tried once). */
async function startOne(root: string, rules: number): Promise<BaselineService> {
  const what = `${SCRIPT} --rules ${rules} in ${root}`;
  const child = await within(
    spawnPinned<BaselineCommands, unknown>(SERVER_CORE, join(root, SCRIPT), ['--rules', String(rules)], SERVER_FLAGS, root),
    READY_TIMEOUT_MS,
    `${what} to report ready over IPC`,
  );
  const ready = BaselineReady.safeParse(child.ready);
  if (!ready.success) {
    await child.stop();
    throw new Error(`${what} reported ready as ${JSON.stringify(child.ready)}: ${z.prettifyError(ready.error)}`);
  }
  const cpuUs = async (): Promise<number> => {
    const stats = BaselineStats.safeParse(await within(child.call('stats', null), CALL_TIMEOUT_MS, `${what} to answer stats`));
    if (!stats.success) throw new Error(`${what} answered stats with ${z.prettifyError(stats.error)}`);
    return stats.data.cpuUs;
  };
  try {
    await cpuUs();
  } catch (err) {
    await child.stop();
    throw err;
  }
  const { port, token, startMs } = ready.data;
  return { pid: child.pid, port, token, startMs, cpuUs, stop: () => child.stop() };
}

async function bundleEtag(service: BaselineService): Promise<string> {
  const url = `http://127.0.0.1:${service.port}${BUNDLE_PATH}`;
  const res = await within(fetch(url, { headers: { Authorization: `Bearer ${service.token}` } }), CALL_TIMEOUT_MS, `GET ${url}`);
  await res.arrayBuffer();
  const etag = res.headers.get('etag');
  if (res.status !== 200 || etag === null) throw new Error(`the baseline's bundle endpoint answered ${res.status} without an ETag`);
  const again = await fetch(url, { headers: { Authorization: `Bearer ${service.token}`, 'If-None-Match': etag } });
  if (again.status !== 304) throw new Error(`the baseline's bundle endpoint answered ${again.status} to its current If-None-Match`);
  return etag;
}

/**
 * Starts the baseline's services with 10 and 10,000 rules; a checkout that cannot serve is a reason,
 * not a throw. A child that never reported ready is left to ipc.ts, which stops it when we exit.
 */
export async function startBaseline(path: string): Promise<BaselineStart> {
  const root = resolve(path);
  if (!existsSync(join(root, SCRIPT)))
    return { ok: false, problem: `${join(root, SCRIPT)} does not exist: name a checkout of this repository` };
  if (!existsSync(join(root, 'node_modules')))
    return { ok: false, problem: `${root} has no node_modules: install or link them there first` };
  const started = await Promise.allSettled([startOne(root, 10), startOne(root, 10_000)]);
  const [small, large] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  const stop = async (): Promise<void> => {
    await Promise.all([small?.stop(), large?.stop()]);
  };
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed || !small || !large) throw failed?.reason;
    const etag = await bundleEtag(small);
    return { ok: true, baseline: { root, checkout: describeCheckout(root), small, large, etag, stop } };
  } catch (err) {
    await stop();
    return { ok: false, problem: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Our paths measured against the baseline, and which of its services answers each. Every variant
 * our two services serve has its twin, so each baseline process runs the same mix as its
 * counterpart: with AuthZEN left out, an A/A run (BENCH_BASELINE naming this very tree) found our
 * 10-rule process 2-10% cheaper per request at the fixed load than its identical twin in every
 * round; with it, the same run gave 0.99-1.00 (median of rounds).
 */
const PATHS = [
  { key: 'decide', service: 'small' },
  { key: 'authzen', service: 'small' },
  { key: 'decide10k', service: 'large' },
  { key: 'poll304', service: 'small' },
] as const;

/** The key of a path's twin on the baseline. */
export const baselineKey = (key: string): string => `${key}@baseline`;

/** The keys of our variants that have a twin on the baseline. */
export const comparedKeys: readonly string[] = PATHS.map((p) => p.key);

/**
 * Our variants with, right after each compared path, its twin on the baseline: the same requests,
 * with the baseline's own connector token and ETag on the bundle path.
 */
export function withBaseline(ours: readonly Variant[], baseline: Baseline): Variant[] {
  return ours.flatMap((v): Variant[] => {
    const path = PATHS.find((p) => p.key === v.key);
    if (!path) return [v];
    const service = baseline[path.service];
    const requests: readonly HttpRequest[] =
      v.expect === 304
        ? v.requests.map((r) => ({
            ...r,
            headers: { ...r.headers, Authorization: `Bearer ${service.token}`, 'If-None-Match': baseline.etag },
          }))
        : v.requests;
    const twin: Variant = {
      key: baselineKey(v.key),
      label: `${v.label} [baseline]`,
      port: service.port,
      pid: service.pid,
      requests,
      expect: v.expect,
      cpuUs: service.cpuUs,
    };
    return [v, twin];
  });
}

/**
 * Whether the baseline serves what we serve: the same decisions on the first `n` bodies at both
 * sizes and the same bundle bytes (its ETag). A difference is not fatal (a refactor may change the
 * bundle's bytes) but the reader must know the two trees were not asked the same question.
 */
export async function checkBaseline(fleet: Fleet, baseline: Baseline, n = 200): Promise<string[]> {
  const decision = async (port: number, body: DecisionBody): Promise<string> => {
    const r = decisionRequest(body);
    const res = await fetch(`http://127.0.0.1:${port}${r.path}`, { method: r.method, headers: r.headers, body: r.body ?? null });
    const json = (await res.json()) as { decision?: unknown };
    return `${res.status} ${String(json.decision)}`;
  };
  const differing = async (ours: number, theirs: number, bodies: readonly DecisionBody[]): Promise<number> => {
    let differ = 0;
    for (const b of bodies.slice(0, n)) if ((await decision(ours, b)) !== (await decision(theirs, b))) differ++;
    return differ;
  };
  const small = await differing(fleet.small.ready.port, baseline.small.port, fleet.bodies.small);
  const large = await differing(fleet.large.ready.port, baseline.large.port, fleet.bodies.large);
  const lines = [
    small + large === 0
      ? `the baseline decides as this tree on the first ${n} bodies with 10 and with 10,000 rules`
      : `WARNING the baseline decides otherwise on ${small} of ${n} bodies with 10 rules and ${large} with 10,000: the two trees were not asked the same question`,
  ];
  lines.push(
    baseline.etag === fleet.bundle.etag
      ? 'the baseline serves the same bundle bytes (same ETag)'
      : `WARNING the baseline's bundle differs from this tree's (ETag ${baseline.etag} against ${fleet.bundle.etag}): the 304 path is still comparable, the bundle is not the same`,
  );
  return lines;
}
