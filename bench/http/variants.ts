// The processes of the throughput runs (servers on core 0, the load generator on core 1) and the
// variants measured against them, with a check that each answers what we think it answers.
import { stat, truncate } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { LOADGEN_CORE, SERVER_CORE } from './cores.ts';
import { spawnPinned, type Pinned } from './ipc.ts';
import type { HttpRequest } from './load.ts';
import type { LoadCommands } from './loadgen.ts';
import { startOpa, type OpaServer } from './opa.ts';
import type { Variant } from './rounds.ts';
import type { EchoReady } from './servers/echo.ts';
import type { FleetServiceCommands, FleetServiceReady } from './servers/fleet-service.ts';
import type { ServiceCommands, ServiceReady } from './servers/service.ts';
import type { ServerCommands } from './servers/stats.ts';
import { API_KEY, BUNDLE_PATH, decisionBodies, opaInput, tenantRules, type DecisionBody } from './tenant.ts';

/** Distinct request bodies per decision variant: enough that 10,000 rules are not all cache-hot. */
const BODIES = 2_000;

const script = (name: string): string => fileURLToPath(new URL(name, import.meta.url));

export type Service = Pinned<ServiceCommands, ServiceReady>;

/** --expose-gc: memory figures are taken after a full collection. */
export const SERVER_FLAGS = ['--expose-gc'];

export function startService(rules: number): Promise<Service> {
  return spawnPinned<ServiceCommands, ServiceReady>(SERVER_CORE, script('./servers/service.ts'), ['--rules', String(rules)], SERVER_FLAGS);
}

export function startLoadgen(): Promise<Pinned<LoadCommands, unknown>> {
  return spawnPinned<LoadCommands, unknown>(LOADGEN_CORE, script('./loadgen.ts'));
}

export interface Fleet {
  readonly echo: Pinned<ServerCommands, EchoReady>;
  readonly small: Service;
  readonly large: Service;
  /** The service with 10 rules and `--decision-log` to a file; otherwise configured as `small`. */
  readonly logged: Pinned<FleetServiceCommands, FleetServiceReady>;
  readonly opa: OpaServer | undefined;
  readonly bundle: { readonly etag: string; readonly bytes: Uint8Array };
  readonly bodies: { readonly small: readonly DecisionBody[]; readonly large: readonly DecisionBody[] };
  stop(): Promise<void>;
}

/**
 * Starts the echo baseline, the service with 10 and with 10,000 rules, the service with 10 rules
 * writing the decision log to a file, and OPA when `opaBin` is set.
 */
export async function startFleet(opaBin: string | undefined): Promise<Fleet> {
  const [echo, small, large, logged] = await Promise.all([
    spawnPinned<ServerCommands, EchoReady>(SERVER_CORE, script('./servers/echo.ts'), [], SERVER_FLAGS),
    startService(10),
    startService(10_000),
    // --timers off --log-level silent: what service.ts sets, so only the decision log differs from `small`.
    spawnPinned<FleetServiceCommands, FleetServiceReady>(
      SERVER_CORE,
      script('./servers/fleet-service.ts'),
      ['--rules', '10', '--decision-log', 'file', '--timers', 'off', '--log-level', 'silent'],
      SERVER_FLAGS,
    ),
  ]);
  const res = await fetch(`http://127.0.0.1:${small.ready.port}${BUNDLE_PATH}`, {
    headers: { Authorization: `Bearer ${small.ready.token}` },
  });
  const etag = res.headers.get('etag');
  if (res.status !== 200 || etag === null) throw new Error(`the bundle endpoint answered ${res.status} without an ETag`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const opa = opaBin ? await startOpa(opaBin, bytes, SERVER_CORE) : undefined;
  return {
    echo,
    small,
    large,
    logged,
    opa,
    bundle: { etag, bytes },
    bodies: { small: decisionBodies(tenantRules(10), BODIES, 1), large: decisionBodies(tenantRules(10_000), BODIES, 2) },
    async stop() {
      await Promise.all([echo.stop(), small.stop(), large.stop(), logged.stop(), opa?.stop()]);
    },
  };
}

export const decisionRequest = (body: DecisionBody): HttpRequest => ({
  method: 'POST',
  path: '/authorization',
  body: JSON.stringify(body),
  headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
});

/** The same decision as AuthZEN 1.0 asks it: the action as an object. */
const evaluationRequest = (body: DecisionBody): HttpRequest => ({
  method: 'POST',
  path: '/access/v1/evaluation',
  body: JSON.stringify({ ...body, action: { name: body.action } }),
  headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
});

const cpuOf = (p: Pinned<ServerCommands, unknown>) => async (): Promise<number> => (await p.call('stats', null)).cpuUs;

/**
 * The logged service's CPU, read after emptying its decision log: at saturation it grows by about
 * 20 MB/s, a gigabyte over a run. Each reading follows a run on that server (the settle run, then the
 * measured one), so an empty file means no line was written. The truncation is done here, on the load
 * core, before the run's figures are read, so none of its kernel work is counted against a run.
 */
export const loggedCpuOf = (p: Fleet['logged']) => async (): Promise<number> => {
  const file = p.ready.decisionLog as string;
  if ((await stat(file)).size === 0) throw new Error(`the decision log ${file} stayed empty over a run of decisions`);
  await truncate(file, 0);
  return (await p.call('stats', null)).cpuUs;
};

/** The variants, baseline first. The echo server gets the very bytes the decision endpoint gets. */
export function variantsOf(fleet: Fleet): Variant[] {
  const small = fleet.bodies.small.map(decisionRequest);
  const variants: Variant[] = [
    {
      key: 'raw',
      label: 'raw node:http JSON echo',
      port: fleet.echo.ready.port,
      pid: fleet.echo.pid,
      requests: small,
      expect: 200,
      cpuUs: cpuOf(fleet.echo),
    },
    {
      key: 'decide',
      label: 'POST /authorization, 10 rules',
      port: fleet.small.ready.port,
      pid: fleet.small.pid,
      requests: small,
      expect: 200,
      cpuUs: cpuOf(fleet.small),
    },
    {
      key: 'decideLog',
      label: 'POST /authorization, --decision-log file',
      port: fleet.logged.ready.port,
      pid: fleet.logged.pid,
      requests: small,
      expect: 200,
      cpuUs: loggedCpuOf(fleet.logged),
    },
    {
      key: 'authzen',
      label: 'POST /access/v1/evaluation, 10 rules',
      port: fleet.small.ready.port,
      pid: fleet.small.pid,
      requests: fleet.bodies.small.map(evaluationRequest),
      expect: 200,
      cpuUs: cpuOf(fleet.small),
    },
    {
      key: 'decide10k',
      label: 'POST /authorization, 10,000 rules',
      port: fleet.large.ready.port,
      pid: fleet.large.pid,
      requests: fleet.bodies.large.map(decisionRequest),
      expect: 200,
      cpuUs: cpuOf(fleet.large),
    },
    {
      key: 'poll304',
      label: 'GET bundle, If-None-Match → 304',
      port: fleet.small.ready.port,
      pid: fleet.small.pid,
      expect: 304,
      cpuUs: cpuOf(fleet.small),
      requests: [
        {
          method: 'GET',
          path: BUNDLE_PATH,
          headers: { Authorization: `Bearer ${fleet.small.ready.token}`, 'If-None-Match': fleet.bundle.etag },
        },
      ],
    },
  ];
  if (fleet.opa) {
    const opa = fleet.opa;
    variants.push({
      key: 'opa',
      label: `OPA ${opa.version} REST API, same bundle`,
      port: opa.port,
      pid: opa.pid,
      expect: 200,
      cpuUs: () => opa.cpuUs(),
      requests: fleet.bodies.small.map((b) => ({
        method: 'POST',
        path: '/v1/data/acl/allow',
        body: JSON.stringify({ input: opaInput(b) }),
        headers: { 'Content-Type': 'application/json' },
      })),
    });
  }
  return variants;
}

/** Asks each decision server about the first `n` bodies: the allow share, and whether OPA agrees. */
export async function checkDecisions(fleet: Fleet, n = 200): Promise<string[]> {
  const ask = async (port: number, body: DecisionBody): Promise<boolean> => {
    const r = decisionRequest(body);
    const res = await fetch(`http://127.0.0.1:${port}${r.path}`, { method: r.method, headers: r.headers, body: r.body ?? null });
    const json = (await res.json()) as { decision?: string };
    if (res.status !== 200 || (json.decision !== 'allow' && json.decision !== 'deny'))
      throw new Error(`POST /authorization answered ${res.status} ${JSON.stringify(json)}`);
    return json.decision === 'allow';
  };
  const lines: string[] = [];
  const share = (xs: boolean[]): string => `${Math.round((100 * xs.filter(Boolean).length) / xs.length)}% allowed`;
  const small: boolean[] = [];
  for (const b of fleet.bodies.small.slice(0, n)) small.push(await ask(fleet.small.ready.port, b));
  const large: boolean[] = [];
  for (const b of fleet.bodies.large.slice(0, n)) large.push(await ask(fleet.large.ready.port, b));
  lines.push(`decision mix (first ${n} bodies): 10 rules ${share(small)}, 10,000 rules ${share(large)}`);
  if (fleet.opa) {
    let agree = 0;
    for (const [i, b] of fleet.bodies.small.slice(0, n).entries()) {
      const res = await fetch(`http://127.0.0.1:${fleet.opa.port}/v1/data/acl/allow`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ input: opaInput(b) }),
      });
      const json = (await res.json()) as { result?: unknown };
      if (json.result === small[i]) agree++;
    }
    lines.push(`OPA agrees with the service on ${agree} of ${n} decisions`);
  }
  const res = await fetch(`http://127.0.0.1:${fleet.small.ready.port}${BUNDLE_PATH}`, {
    headers: { Authorization: `Bearer ${fleet.small.ready.token}`, 'If-None-Match': fleet.bundle.etag },
  });
  if (res.status !== 304) throw new Error(`the bundle endpoint answered ${res.status} to a current If-None-Match`);
  return lines;
}
