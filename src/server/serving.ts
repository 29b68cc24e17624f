// The HTTP side both modes share: bundle metrics and long-poll releases on every publish, the ops
// listener, the API listener, and a graceful close (held long polls answered, in-flight requests
// finished, each connection ended once idle: drain.ts).
import type { Logger } from 'pino';
import type { Config, Tls } from '../config.ts';
import type { ShadowLedger } from '../shadow/index.ts';
import { type AdmissionDeps, createApiHandler, createLongPolls, createOpsApp, type FleetDeps, type LongPolls } from '../http/index.ts';
import type { Metrics } from '../metrics.ts';
import { type ApiListening, listenApi, listenOps, type Listening } from './listeners.ts';
import { bundleKey, type Store } from '../store/index.ts';

/** A connection is ended once it has been idle this long while the API listener drains. */
const DRAIN_IDLE_MS = 1_000;
/** Whatever is still open then (a request that never finishes) is cut. */
const DRAIN_FORCE_MS = 10_000;

export interface Serving {
  readonly longPolls: LongPolls;
  readonly ops: Listening;
  /** Opens the API listener (once the store holds what should be served). */
  listenApi(tls: Tls): Promise<Listening>;
  /** Closes the API listener gracefully; the ops listener stays until closeOps. */
  closeApi(): Promise<void>;
  closeOps(): Promise<void>;
}

export interface ServingOptions {
  readonly config: Config;
  readonly store: Store;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly now: () => Date;
  /** The same clock in epoch milliseconds (read on every decision, so it makes no Date). */
  readonly nowMs: () => number;
  /** undefined when ready, else why not (the /readyz answer). */
  notReady(): string | undefined;
  /** The public base URL when --public-url is not given (default: the API listener's own URL). */
  readonly defaultPublicUrl?: string;
  /** What OPA agents report, and the decision log. */
  readonly fleet: FleetDeps;
  /** The admission webhook on the API listener (Kubernetes mode). */
  readonly admission?: AdmissionDeps;
  /** Counts shadow decisions (docs/rules.md, "Shadow decisions"). */
  readonly shadow?: ShadowLedger;
}

export async function startServing(o: ServingOptions): Promise<Serving> {
  const { config, store, metrics, log } = o;
  const longPolls = createLongPolls({ onSize: (n) => metrics.longPolls.set(n), now: o.nowMs });
  store.onBundleChange((changed, snapshot) => {
    for (const b of changed) longPolls.changed(bundleKey(b.tenant, b.name));
    metrics.bundleRevision.reset();
    metrics.bundleBytes.reset();
    for (const t of snapshot.tenants.values()) {
      for (const b of t.bundles.values()) {
        metrics.bundleRevision.set({ tenant: b.tenant, bundle: b.name }, b.built.revision);
        metrics.bundleBytes.set({ tenant: b.tenant, bundle: b.name }, b.built.bytes.length);
      }
    }
  });
  const ops = await listenOps(createOpsApp({ metrics, log, notReady: o.notReady }), config.opsListen);
  log.info({ url: ops.url }, 'Listening for metrics and health');
  let api: ApiListening | undefined;
  return {
    longPolls,
    ops,
    async listenApi(tls) {
      api = await listenApi(
        createApiHandler({
          store,
          longPolls,
          metrics,
          log: log.child({ module: 'http' }),
          now: o.nowMs,
          maxBodyBytes: config.maxBodyBytes,
          maxWaitSeconds: config.maxLongPollSeconds,
          publicUrl: () => config.publicUrl ?? o.defaultPublicUrl ?? api?.url ?? '',
          fleet: o.fleet,
          ...(o.admission ? { admission: o.admission } : {}),
          ...(o.shadow ? { shadow: o.shadow } : {}),
        }),
        {
          address: config.listen,
          tls,
          stateDir: config.stateDir,
          log,
          now: o.now,
          requestTimeoutMs: (config.maxLongPollSeconds + 30) * 1000,
        },
      );
      return api;
    },
    async closeApi() {
      if (!api) return;
      // Answers from now on say `Connection: close`; held long polls are answered at once (OPA polls
      // again, on a new connection, which the Service sends to another replica); a connection is
      // ended only once idle for a second, so no client loses a request it was sending (drain.ts).
      const drained = api.drainer.drain({ idleMs: DRAIN_IDLE_MS, forceAfterMs: DRAIN_FORCE_MS });
      longPolls.releaseAll();
      await drained;
      api.close();
    },
    async closeOps() {
      await new Promise<void>((resolve) => {
        ops.server.close(() => resolve());
        ops.server.closeAllConnections();
      });
    },
  };
}
