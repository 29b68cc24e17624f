// Agents seen by every replica count: an OPA reports to whichever replica the Service sends it to,
// but RolledOut must speak for the whole fleet. Each replica publishes the agents it hears into its
// own ConfigMap in the operator namespace (gzip JSON, rate-limited, refreshed as a heartbeat,
// owned by its Pod so the garbage collector removes it with the Pod), and watches its peers'
// ConfigMaps: the registry merges them, each agent counted once as the replica that heard from it
// last describes it. The per-pod-status pattern of Gatekeeper, with a ConfigMap as the carrier.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { makeInformer, type Informer, type KubernetesListObject, type ObjectCache, type V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import { MAX_BUNDLES_NAMED, type Agent, type AgentRegistry } from '../fleet/index.ts';
import { describeError, statusOf, type KubeClients } from './client.ts';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export const LABEL_AGENTS = 'acl.policyagent.dev/agents';
export const ANNOTATION_REPLICA = 'acl.policyagent.dev/replica';
export const ANNOTATION_UPDATED = 'acl.policyagent.dev/updated';
const KEY = 'agents.json.gz';
/** A ConfigMap holds at most 1 MiB: past this, the least recently heard agents are left out. */
const MAX_PUBLISHED_BYTES = 900 * 1024;
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
}

export interface AgentSharing {
  start(): Promise<void>;
  /** Publishes what this replica holds now (tests). */
  publish(): Promise<void>;
  /** Stops watching and deletes this replica's ConfigMap. */
  stop(): Promise<void>;
}

export function createAgentSharing(o: AgentSharingOptions): AgentSharing {
  const { clients, namespace, identity, registry, log } = o;
  const name = agentsConfigMapName(identity);
  const intervalMs = o.publishIntervalMs ?? PUBLISH_INTERVAL_MS;
  const heartbeatMs = o.heartbeatMs ?? Math.min(30_000, registry.windowMs / 3);
  let resourceVersion: string | undefined;
  let lastPublishMs = -Infinity;
  let publishedSomething = false;
  let timer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  let warnedSize = false;
  let warnedWrite = false;
  let informer: (Informer<V1ConfigMap> & ObjectCache<V1ConfigMap>) | undefined;

  async function body(): Promise<{ cm: V1ConfigMap; empty: boolean }> {
    const nowMs = o.now();
    const local = registry.exportLocal(nowMs);
    const empty = Object.keys(local).length === 0;
    const { zipped, total, kept } = await encodeAgents(local, identity, nowMs, MAX_PUBLISHED_BYTES);
    if (kept < total && !warnedSize) {
      warnedSize = true;
      log.warn({ configMap: name, agents: total, kept }, 'Shared only the most recently heard agents: too many for one ConfigMap');
    }
    const cm: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name,
        namespace,
        labels: { [LABEL_AGENTS]: 'true', 'app.kubernetes.io/managed-by': 'acl-operator' },
        annotations: { [ANNOTATION_REPLICA]: identity, [ANNOTATION_UPDATED]: new Date(nowMs).toISOString() },
        ...(o.pod ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: o.pod.name, uid: o.pod.uid }] } : {}),
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
      },
      binaryData: { [KEY]: zipped.toString('base64') },
    };
    return { cm, empty };
  }

  async function write(): Promise<void> {
    const { cm, empty } = await body();
    // Nothing heard, and nothing told before: no ConfigMap at all (a replica nobody reports to).
    if (empty && !publishedSomething) return;
    try {
      const res =
        resourceVersion === undefined
          ? await clients.core.createNamespacedConfigMap({ namespace, body: cm })
          : await clients.core.replaceNamespacedConfigMap({ name, namespace, body: cm });
      resourceVersion = res.metadata?.resourceVersion;
      publishedSomething = !empty;
      warnedWrite = false;
    } catch (err) {
      const status = statusOf(err);
      if (status === 409 || status === 404) {
        // Someone else wrote it (an earlier run of this replica), or it was deleted: read it, and again next time.
        try {
          resourceVersion = (await clients.core.readNamespacedConfigMap({ name, namespace })).metadata?.resourceVersion;
        } catch (readErr) {
          if (statusOf(readErr) !== 404) throw readErr;
          resourceVersion = undefined;
        }
        schedule();
        return;
      }
      if (!warnedWrite) {
        warnedWrite = true;
        log.warn(
          {
            configMap: `${namespace}/${name}`,
            err: describeError(err),
            ...(status === 403 ? { hint: "the operator's Role needs configmaps in its namespace (deploy/20-rbac.yaml)" } : {}),
          },
          "Could not share this replica's agents: RolledOut counts only the agents the leader hears",
        );
      }
    }
  }

  function publish(): Promise<void> {
    running = running
      .then(
        () => (stopped ? undefined : write()),
        () => (stopped ? undefined : write()),
      )
      .catch((err: unknown) => {
        log.warn({ err: describeError(err) }, "Could not share this replica's agents");
      });
    return running;
  }

  function schedule(): void {
    if (timer !== undefined || stopped) return;
    const waitMs = Math.max(0, lastPublishMs + intervalMs - o.now());
    timer = setTimeout(() => {
      timer = undefined;
      lastPublishMs = o.now();
      void publish();
    }, waitMs);
    timer.unref();
  }

  async function decode(cm: V1ConfigMap): Promise<void> {
    const replica = cm.metadata?.annotations?.[ANNOTATION_REPLICA];
    if (replica === undefined || replica === identity) return;
    const data = cm.binaryData?.[KEY];
    if (data === undefined) {
      registry.setPeer(replica, undefined, o.now());
      return;
    }
    try {
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
        }));
      }
      registry.setPeer(replica, bundles, o.now());
    } catch (err) {
      log.warn(
        { configMap: cm.metadata?.name, replica, err: err instanceof Error ? err.message : String(err) },
        'Ignored the agents of a peer replica: its ConfigMap does not read',
      );
    }
  }

  /** The leader deletes the ConfigMap of a replica that stopped writing long ago (no Pod owned it). */
  async function sweep(): Promise<void> {
    if (!o.leading() || !informer) return;
    const limitMs = Math.max(registry.windowMs * 2, 600_000);
    for (const cm of informer.list()) {
      const updated = Date.parse(cm.metadata?.annotations?.[ANNOTATION_UPDATED] ?? '');
      if (cm.metadata?.name === name || !Number.isFinite(updated) || o.now() - updated < limitMs) continue;
      await clients.core.deleteNamespacedConfigMap({ name: cm.metadata?.name ?? '', namespace }).catch((err: unknown) => {
        if (statusOf(err) !== 404)
          log.warn({ configMap: cm.metadata?.name, err: describeError(err) }, 'Could not delete the agents of a replica long gone');
      });
    }
  }

  const unsubscribe = registry.onLocalChange(schedule);

  return {
    async start() {
      const selector = `${LABEL_AGENTS}=true`;
      const path = `/api/v1/namespaces/${namespace}/configmaps`;
      informer = makeInformer<V1ConfigMap>(
        clients.config,
        path,
        async () =>
          (await clients.core.listNamespacedConfigMap({ namespace, labelSelector: selector })) as KubernetesListObject<V1ConfigMap>,
        selector,
      );
      informer.on('add', (cm) => {
        void decode(cm);
      });
      informer.on('update', (cm) => {
        void decode(cm);
      });
      informer.on('delete', (cm) => {
        const replica = cm.metadata?.annotations?.[ANNOTATION_REPLICA];
        if (replica !== undefined && replica !== identity) registry.setPeer(replica, undefined, o.now());
      });
      informer.on('error', (err: unknown) => {
        if (stopped) return;
        log.warn(
          {
            err: describeError(err),
            ...(statusOf(err) === 403 ? { hint: "the operator's Role needs configmaps in its namespace (deploy/20-rbac.yaml)" } : {}),
          },
          "The watch of peer replicas' agents stopped; restarting it",
        );
        setTimeout(() => {
          if (!stopped) informer?.start().catch(() => undefined);
        }, 5000).unref();
      });
      await informer.start().catch((err: unknown) => log.warn({ err: describeError(err) }, 'Could not watch the agents of peer replicas'));
      heartbeat = setInterval(() => {
        if (publishedSomething || Object.keys(registry.exportLocal(o.now())).length > 0) void publish();
        void sweep();
      }, heartbeatMs);
      heartbeat.unref();
    },
    publish,
    async stop() {
      stopped = true;
      unsubscribe();
      if (timer) clearTimeout(timer);
      if (heartbeat) clearInterval(heartbeat);
      await running;
      await informer?.stop();
      // Our agents are no longer heard by anyone through us: the peers stop counting them at once.
      await clients.core.deleteNamespacedConfigMap({ name, namespace }).catch((err: unknown) => {
        if (statusOf(err) !== 404)
          log.warn({ configMap: `${namespace}/${name}`, err: describeError(err) }, "Could not delete this replica's agents ConfigMap");
      });
    },
  };
}
