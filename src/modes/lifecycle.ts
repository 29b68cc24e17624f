// How both modes run and stop, written once: the activity flush (bundle polls become Bundle status
// lastSync; standalone also writes them to its state folder) on a timer, and the graceful stop in
// its one order: API closed, activity flushed, controller drained, the mode's own parts released
// (in Kubernetes mode the Lease, after the last status writes), fleet, threads, ops listener.
import type { Logger } from 'pino';
import type { Controller } from '../controller/index.ts';
import type { Store, SyncRecord } from '../store/index.ts';
import type { Fleet } from '../fleet/index.ts';
import type { Serving } from '../server/index.ts';
import type { Base } from './core.ts';
import type { ShadowStatus } from './shadow-status.ts';

export interface ActivityFlushOptions {
  readonly store: Store;
  readonly controller: Controller;
  readonly log: Logger;
  /** The log message of a failed flush. */
  readonly failure: string;
  readonly everyMs: number;
  /** Writes a bundle's changed activity somewhere before its status is refreshed (standalone: the state folder). */
  readonly persist?: (tenant: string, bundle: string, records: readonly SyncRecord[]) => Promise<void>;
  /** Anything else a flush writes, before it waits for the queue (standalone: decisions and agents files). */
  readonly more?: () => Promise<void>;
  /** Also run at every tick, whatever the flush does (standalone: the token files check). */
  readonly eachTick?: () => void;
  /** Rule status.shadow: each flush enqueues the rules whose counts moved (so a stop writes the last ones); stopTimer stops its timer too. */
  readonly shadow?: ShadowStatus;
}

export interface ActivityFlush {
  /** Enqueues every bundle whose activity changed and resolves once their status is written. */
  flush(): Promise<void>;
  /** The same, a failure logged rather than thrown (the timer's and stop()'s flush). */
  flushLogged(): Promise<void>;
  stopTimer(): void;
}

/** Starts flushing sync activity every `everyMs`. */
export function startActivityFlush(o: ActivityFlushOptions): ActivityFlush {
  const flush = async (): Promise<void> => {
    for (const key of o.store.activity.takeChanged()) {
      const [tenant, bundle] = key.split('/') as [string, string];
      await o.persist?.(tenant, bundle, o.store.activity.list(key));
      o.controller.enqueue({ kind: 'Bundle', namespace: tenant, name: bundle });
    }
    await o.more?.();
    o.shadow?.tick();
    await o.controller.idle();
  };
  const flushLogged = (): Promise<void> => flush().catch((err: unknown) => o.log.error({ err }, o.failure));
  const timer = setInterval(() => {
    void flushLogged();
    o.eachTick?.();
  }, o.everyMs);
  timer.unref();
  const stopTimer = (): void => {
    clearInterval(timer);
    o.shadow?.stop();
  };
  return { flush, flushLogged, stopTimer };
}

/** What a mode closes after its controller, in this order. */
export interface Remaining {
  /** The mode's own parts (Kubernetes: the Lease first, so the next leader starts from the last status writes). */
  readonly release?: () => Promise<void>;
  readonly fleet: Pick<Fleet, 'stop'>;
  readonly closeThreads: () => Promise<void>;
  readonly http: Pick<Serving, 'closeOps'>;
}

/** Closes what is left once the controller is drained (also what a failed start closes). */
export async function closeRemaining(r: Remaining): Promise<void> {
  await r.release?.();
  await r.fleet.stop();
  await r.closeThreads();
  await r.http.closeOps();
}

export interface StopPlan extends Remaining {
  readonly base: Pick<Base, 'log' | 'readiness'>;
  /** Stops what brings new work (watchers, timers, subscriptions); runs first. */
  readonly quiesce: () => void;
  readonly http: Pick<Serving, 'closeApi' | 'closeOps'>;
  readonly activity: ActivityFlush;
  readonly controller: Controller;
  /** Ends the console's live streams and closes its listener. */
  readonly closeConsole?: () => Promise<void>;
}

/** Graceful stop: no new connections, held long polls answered, in-flight requests finished; safe to call twice. */
export function gracefulStop(plan: StopPlan): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= runStop(plan);
    return stopping;
  };
}

async function runStop(p: StopPlan): Promise<void> {
  p.base.readiness.stopping();
  p.quiesce();
  p.activity.stopTimer();
  await p.closeConsole?.();
  await p.http.closeApi();
  await p.activity.flushLogged();
  p.controller.stop();
  await p.controller.idle();
  await closeRemaining(p);
  p.base.log.info('Stopped');
}
