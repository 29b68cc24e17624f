// Agents seen by every replica count: an OPA reports to whichever replica the Service sends it to,
// but RolledOut must speak for the whole fleet. Each replica publishes the agents it hears into its
// own ConfigMap in the operator namespace (gzip JSON, rate-limited, refreshed as a heartbeat,
// owned by its Pod so the garbage collector removes it with the Pod), and watches its peers'
// ConfigMaps: the registry merges them, each agent counted once as the replica that heard from it
// last describes it. The per-pod-status pattern of Gatekeeper, with a ConfigMap as the carrier.
// The same ConfigMap carries this replica's shadow tallies (shadow-share.ts) for the leader to sum.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { makeInformer, type Informer, type KubernetesListObject, type ObjectCache, type V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AGENT_ID, MAX_BUNDLES_NAMED, type Agent, type AgentRegistry } from '../fleet/index.ts';
import type { ShadowHub } from '../shadow/index.ts';
import { describeError, statusOf, type KubeClients } from './client.ts';
import { encodeTallies, orderedHandOver, SHADOW_KEY, type ShadowHandOver } from './shadow-share.ts';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export const LABEL_AGENTS = 'acl.policyagent.dev/agents';
export const ANNOTATION_REPLICA = 'acl.policyagent.dev/replica';
export const ANNOTATION_UPDATED = 'acl.policyagent.dev/updated';
const KEY = 'agents.json.gz';
/** A ConfigMap holds at most 1 MiB, shadow tallies included: past this, the least recently heard agents are left out. */
const MAX_PUBLISHED_BYTES = 860 * 1024;
/** Shortest time between two publications of this replica's agents. */
export const PUBLISH_INTERVAL_MS = 2000;

const PeerAgent = z.object({
  id: z.string().max(128),
  version: z.string().max(64).optional(),
  clientIp: z.string().max(128),
  lastReportMs: z.number(),
  activeRevision: z.string().max(1024).optional(),
  lastActivation: z.string().max(64).optional(),
  lastDownload: z.string().max(64).optional(),
  error: z.object({ code: z.string().max(256), message: z.string().max(1024) }).optional(),
  httpCode: z.number().int().optional(),
  // As many as a report may name (one OPA listing 65 bundles must not make peers refuse the whole ConfigMap).
  alsoLoads: z.array(z.string().max(253)).max(MAX_BUNDLES_NAMED),
  // Absent from the payloads of replicas older than signed bundles: read as no label; so is one a
  // status report would not have carried (printable ASCII only: the status command prints it as is).
  signingKey: z.string().regex(AGENT_ID).optional().catch(undefined),
});
const PeerData = z.object({
  v: z.literal(1),
  replica: z.string(),
  updatedMs: z.number(),
  bundles: z.record(z.string(), z.array(PeerAgent)),
});

/**
 * A replica's agents as its ConfigMap carries them (gzip JSON), at most `maxBytes`: when all of
 * them do not fit, the most recently heard half, quarter, ... of all of them.
 */
export async function encodeAgents(
  local: Readonly<Record<string, readonly Agent[]>>,
  replica: string,
  nowMs: number,
  maxBytes: number,
): Promise<{ zipped: Buffer; total: number; kept: number }> {
  const encode = (bundles: Readonly<Record<string, readonly Agent[]>>): Promise<Buffer> =>
    gzipAsync(JSON.stringify({ v: 1, replica, updatedMs: nowMs, bundles }));
  const all = Object.entries(local).flatMap(([k, agents]) => agents.map((a) => [k, a] as const));
  let zipped = await encode(local);
  let kept = all.length;
  if (zipped.length <= maxBytes) return { zipped, total: all.length, kept };
  all.sort((a, b) => b[1].lastReportMs - a[1].lastReportMs);
  for (let keep = 0.5; zipped.length > maxBytes && keep > 0.001; keep /= 2) {
    kept = Math.floor(all.length * keep);
    const bundles: Record<string, Agent[]> = {};
    for (const [k, a] of all.slice(0, kept)) {
      bundles[k] ??= [];
      bundles[k].push(a);
    }
    zipped = await encode(bundles);
  }
  return { zipped, total: all.length, kept };
}

/** `acl-operator-agents-<hash of the identity>`: one per replica, a valid name whatever the identity. */
export function agentsConfigMapName(identity: string): string {
  return `acl-operator-agents-${createHash('sha256').update(identity).digest('hex').slice(0, 10)}`;
}

export interface AgentSharingOptions {
  readonly clients: KubeClients;
  /** The operator namespace. */
  readonly namespace: string;
  readonly identity: string;
  readonly registry: AgentRegistry;
  readonly log: Logger;
  readonly now: () => number;
  /** This replica's Pod (POD_NAME, POD_UID): the owner of its ConfigMap. */
  readonly pod?: { readonly name: string; readonly uid: string };
  readonly publishIntervalMs?: number;
  /** How often the ConfigMap is rewritten while it holds agents (their report times move). */
  readonly heartbeatMs?: number;
  /** Whether this replica leads: the leader deletes ConfigMaps of replicas long gone. */
  readonly leading: () => boolean;
  /** Shadow tallies: this replica's shared, its peers' handed over (absent: none are shared). */
  readonly shadow?: Pick<ShadowHub, 'local' | 'setPeer'>;
}

export interface AgentSharing {
  start(): Promise<void>;
  /** Publishes what this replica holds now (tests). */
  publish(): Promise<void>;
  /** This replica's shadow tallies changed: publish them (rate-limited as agents are). */
  shadowChanged(): void;
  /** Stops watching and deletes this replica's ConfigMap. */
  stop(): Promise<void>;
}

/** One replica's sharing: its settings, its ConfigMap as last written, and its timers and watch. */
interface Sharing {
  readonly o: AgentSharingOptions;
  /** This replica's ConfigMap. */
  readonly name: string;
  readonly intervalMs: number;
  readonly heartbeatMs: number;
  resourceVersion: string | undefined;
  lastPublishMs: number;
  publishedSomething: boolean;
  timer: NodeJS.Timeout | undefined;
  heartbeat: NodeJS.Timeout | undefined;
  running: Promise<void>;
  stopped: boolean;
  warnedSize: boolean;
  warnedShadowSize: boolean;
  warnedWrite: boolean;
  informer: (Informer<V1ConfigMap> & ObjectCache<V1ConfigMap>) | undefined;
  unsubscribe: () => void;
  /** Peers' shadow tallies to the hub, in order per replica (absent: none are shared). */
  readonly shadowIn: ShadowHandOver | undefined;
}

const RBAC_HINT = "the operator's Role needs configmaps in its namespace (deploy/20-rbac.yaml)";

/** This replica's ConfigMap as it should be now, and whether it names no agent at all. */
async function body(s: Sharing): Promise<{ cm: V1ConfigMap; empty: boolean }> {
  const { o, name } = s;
  const nowMs = o.now();
  const local = o.registry.exportLocal(nowMs);
  const tallies = o.shadow?.local();
  const empty = Object.keys(local).length === 0 && !tallies?.tallies.length;
  const { zipped, total, kept } = await encodeAgents(local, o.identity, nowMs, MAX_PUBLISHED_BYTES);
  if (kept < total && !s.warnedSize) {
    s.warnedSize = true;
    o.log.warn({ configMap: name, agents: total, kept }, 'Shared only the most recently heard agents: too many for one ConfigMap');
  }
  const shadow = tallies?.tallies.length ? await encodeTallies(tallies) : undefined;
  if (shadow && !shadow.examples && !s.warnedShadowSize) {
    s.warnedShadowSize = true;
    o.log.warn(
      { configMap: name, tallies: shadow.total, kept: shadow.kept },
      'Shared shadow tallies without examples: too many for one ConfigMap',
    );
  }
  const cm: V1ConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace: o.namespace,
      labels: { [LABEL_AGENTS]: 'true', 'app.kubernetes.io/managed-by': 'acl-operator' },
      annotations: { [ANNOTATION_REPLICA]: o.identity, [ANNOTATION_UPDATED]: new Date(nowMs).toISOString() },
      ...(o.pod ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: o.pod.name, uid: o.pod.uid }] } : {}),
      ...(s.resourceVersion === undefined ? {} : { resourceVersion: s.resourceVersion }),
    },
    binaryData: { [KEY]: zipped.toString('base64'), ...(shadow ? { [SHADOW_KEY]: shadow.zipped.toString('base64') } : {}) },
  };
  return { cm, empty };
}

/** Someone else wrote the ConfigMap (an earlier run of this replica), or it was deleted: read it, and again next time. */
async function reread(s: Sharing): Promise<void> {
  const { namespace } = s.o;
  try {
    s.resourceVersion = (await s.o.clients.core.readNamespacedConfigMap({ name: s.name, namespace })).metadata?.resourceVersion;
  } catch (readErr) {
    if (statusOf(readErr) !== 404) throw readErr;
    s.resourceVersion = undefined;
  }
  schedule(s);
}

async function write(s: Sharing): Promise<void> {
  const { clients, namespace, log } = s.o;
  const { cm, empty } = await body(s);
  // Nothing heard, and nothing told before: no ConfigMap at all (a replica nobody reports to).
  if (empty && !s.publishedSomething) return;
  try {
    const res =
      s.resourceVersion === undefined
        ? await clients.core.createNamespacedConfigMap({ namespace, body: cm })
        : await clients.core.replaceNamespacedConfigMap({ name: s.name, namespace, body: cm });
    s.resourceVersion = res.metadata?.resourceVersion;
    s.publishedSomething = !empty;
    s.warnedWrite = false;
  } catch (err) {
    const status = statusOf(err);
    if (status === 409 || status === 404) return reread(s);
    if (!s.warnedWrite) {
      s.warnedWrite = true;
      log.warn(
        { configMap: `${namespace}/${s.name}`, err: describeError(err), ...(status === 403 ? { hint: RBAC_HINT } : {}) },
        "Could not share this replica's agents: RolledOut counts only the agents the leader hears",
      );
    }
  }
}

/** Writes this replica's ConfigMap after any write still running; resolves when it is done (never rejects). */
function publish(s: Sharing): Promise<void> {
  s.running = s.running
    .then(
      () => (s.stopped ? undefined : write(s)),
      () => (s.stopped ? undefined : write(s)),
    )
    .catch((err: unknown) => {
      s.o.log.warn({ err: describeError(err) }, "Could not share this replica's agents");
    });
  return s.running;
}

/** A publication at most every intervalMs: the local agents changed. */
function schedule(s: Sharing): void {
  if (s.timer !== undefined || s.stopped) return;
  const waitMs = Math.max(0, s.lastPublishMs + s.intervalMs - s.o.now());
  s.timer = setTimeout(() => {
    s.timer = undefined;
    s.lastPublishMs = s.o.now();
    void publish(s);
  }, waitMs);
  s.timer.unref();
}

/** The agents a peer's ConfigMap carries (base64 gzip JSON); throws when they do not read. */
export async function peerAgents(data: string): Promise<Record<string, Agent[]>> {
  const parsed = PeerData.safeParse(
    JSON.parse((await gunzipAsync(Buffer.from(data, 'base64'), { maxOutputLength: 64 * 1024 * 1024 })).toString('utf8')),
  );
  if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? 'not agent data');
  const bundles: Record<string, Agent[]> = {};
  for (const [key, agents] of Object.entries(parsed.data.bundles)) {
    bundles[key] = agents.map((a) => ({
      id: a.id,
      version: a.version,
      clientIp: a.clientIp,
      lastReportMs: a.lastReportMs,
      activeRevision: a.activeRevision,
      lastActivation: a.lastActivation,
      lastDownload: a.lastDownload,
      error: a.error,
      httpCode: a.httpCode,
      alsoLoads: a.alsoLoads,
      signingKey: a.signingKey,
    }));
  }
  return bundles;
}

/** A peer's ConfigMap into the registry; one that does not read is logged and ignored. */
async function decode(s: Sharing, cm: V1ConfigMap): Promise<void> {
  const { registry, identity, log } = s.o;
  const replica = cm.metadata?.annotations?.[ANNOTATION_REPLICA];
  if (replica === undefined || replica === identity) return;
  s.shadowIn?.(replica, cm.binaryData?.[SHADOW_KEY], false);
  const data = cm.binaryData?.[KEY];
  if (data === undefined) {
    registry.setPeer(replica, undefined, s.o.now());
    return;
  }
  try {
    const bundles = await peerAgents(data);
    registry.setPeer(replica, bundles, s.o.now());
  } catch (err) {
    log.warn(
      { configMap: cm.metadata?.name, replica, err: err instanceof Error ? err.message : String(err) },
      'Ignored the agents of a peer replica: its ConfigMap does not read',
    );
  }
}

/** The leader deletes the ConfigMap of a replica that stopped writing long ago (no Pod owned it). */
async function sweep(s: Sharing): Promise<void> {
  const { o, informer } = s;
  if (!o.leading() || !informer) return;
  const limitMs = Math.max(o.registry.windowMs * 2, 600_000);
  for (const cm of informer.list()) {
    const updated = Date.parse(cm.metadata?.annotations?.[ANNOTATION_UPDATED] ?? '');
    if (cm.metadata?.name === s.name || !Number.isFinite(updated) || o.now() - updated < limitMs) continue;
    await o.clients.core.deleteNamespacedConfigMap({ name: cm.metadata?.name ?? '', namespace: o.namespace }).catch((err: unknown) => {
      if (statusOf(err) !== 404)
        o.log.warn({ configMap: cm.metadata?.name, err: describeError(err) }, 'Could not delete the agents of a replica long gone');
    });
  }
}

/** An informer on every replica's agents ConfigMap in the operator namespace, feeding the registry. */
function watchPeers(s: Sharing): Informer<V1ConfigMap> & ObjectCache<V1ConfigMap> {
  const { clients, namespace, registry, identity, log } = s.o;
  const selector = `${LABEL_AGENTS}=true`;
  const informer = makeInformer<V1ConfigMap>(
    clients.config,
    `/api/v1/namespaces/${namespace}/configmaps`,
    async () => (await clients.core.listNamespacedConfigMap({ namespace, labelSelector: selector })) as KubernetesListObject<V1ConfigMap>,
    selector,
  );
  informer.on('add', (cm) => {
    void decode(s, cm);
  });
  informer.on('update', (cm) => {
    void decode(s, cm);
  });
  informer.on('delete', (cm) => {
    const replica = cm.metadata?.annotations?.[ANNOTATION_REPLICA];
    if (replica === undefined || replica === identity) return;
    registry.setPeer(replica, undefined, s.o.now());
    // What it last wrote (its counts as it stopped) is summed before it leaves.
    s.shadowIn?.(replica, cm.binaryData?.[SHADOW_KEY], true);
  });
  informer.on('error', (err: unknown) => {
    if (s.stopped) return;
    log.warn(
      { err: describeError(err), ...(statusOf(err) === 403 ? { hint: RBAC_HINT } : {}) },
      "The watch of peer replicas' agents stopped; restarting it",
    );
    setTimeout(() => {
      if (!s.stopped) s.informer?.start().catch(() => undefined);
    }, 5000).unref();
  });
  return informer;
}

async function start(s: Sharing): Promise<void> {
  const informer = watchPeers(s);
  s.informer = informer;
  await informer.start().catch((err: unknown) => s.o.log.warn({ err: describeError(err) }, 'Could not watch the agents of peer replicas'));
  s.heartbeat = setInterval(() => {
    if (s.publishedSomething || Object.keys(s.o.registry.exportLocal(s.o.now())).length > 0 || s.o.shadow?.local().tallies.length)
      void publish(s);
    void sweep(s);
  }, s.heartbeatMs);
  s.heartbeat.unref();
}

async function stop(s: Sharing): Promise<void> {
  const { clients, namespace, log } = s.o;
  s.stopped = true;
  s.unsubscribe();
  if (s.timer) clearTimeout(s.timer);
  if (s.heartbeat) clearInterval(s.heartbeat);
  await s.running;
  // The shadow counts made since the last publication (up to a 10 s pass): written once more for the
  // leader to sum, as the ConfigMap's deletion tells it this replica is gone.
  if (s.o.shadow?.local().tallies.length) await write(s).catch(() => undefined);
  await s.informer?.stop();
  // Our agents are no longer heard by anyone through us: the peers stop counting them at once.
  await clients.core.deleteNamespacedConfigMap({ name: s.name, namespace }).catch((err: unknown) => {
    if (statusOf(err) !== 404)
      log.warn({ configMap: `${namespace}/${s.name}`, err: describeError(err) }, "Could not delete this replica's agents ConfigMap");
  });
}

/** This replica's side of agent sharing: it publishes on every local change (rate-limited) once created, and watches peers from start(). */
export function createAgentSharing(o: AgentSharingOptions): AgentSharing {
  const s: Sharing = {
    o,
    name: agentsConfigMapName(o.identity),
    intervalMs: o.publishIntervalMs ?? PUBLISH_INTERVAL_MS,
    heartbeatMs: o.heartbeatMs ?? Math.min(30_000, o.registry.windowMs / 3),
    resourceVersion: undefined,
    lastPublishMs: -Infinity,
    publishedSomething: false,
    timer: undefined,
    heartbeat: undefined,
    running: Promise.resolve(),
    stopped: false,
    warnedSize: false,
    warnedShadowSize: false,
    warnedWrite: false,
    informer: undefined,
    unsubscribe: () => undefined,
    shadowIn: o.shadow ? orderedHandOver(o.shadow, o.log) : undefined,
  };
  s.unsubscribe = o.registry.onLocalChange(() => schedule(s));
  return { start: () => start(s), publish: () => publish(s), shadowChanged: () => schedule(s), stop: () => stop(s) };
}
