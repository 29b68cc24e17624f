// Leader election on a coordination.k8s.io/v1 Lease, the way client-go does it: the holder renews
// every renewMs; a candidate takes the Lease over once it has seen the same record, unrenewed, for
// leaseSeconds (measured on its own clock, so clock skew between nodes does not matter). Writes use
// the Lease's resourceVersion, so two candidates never both win.
import { V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeError, statusOf } from './client.ts';

export interface LeaderElectionOptions {
  readonly api: CoordinationV1Api;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly log: Logger;
  /** How long a Lease holds without renewal (default 15 s). */
  readonly leaseSeconds?: number;
  /** Renewal period of the holder (default 5 s); it steps down when renewal failed for renewDeadlineMs (default 10 s). */
  readonly renewMs?: number;
  readonly renewDeadlineMs?: number;
  /** Period of a candidate's attempts (default 2 s). */
  readonly retryMs?: number;
  /** Called on every change of leadership. */
  onChange(leading: boolean): void;
  readonly now?: () => number;
}

export interface LeaderElector {
  isLeader(): boolean;
  /** Starts campaigning; resolves after the first attempt. */
  start(): Promise<void>;
  /** Stops; a holder releases the Lease so another replica takes over at once. */
  stop(): Promise<void>;
}

export function createLeaderElector(options: LeaderElectionOptions): LeaderElector {
  const { api, namespace, name, identity, log } = options;
  const now = options.now ?? (() => Date.now());
  const leaseSeconds = options.leaseSeconds ?? 15;
  const renewMs = options.renewMs ?? 5000;
  // Must end before the Lease does, or another replica could lead while this one still writes.
  const renewDeadlineMs = Math.min(options.renewDeadlineMs ?? 10_000, (leaseSeconds * 1000 * 2) / 3);
  /** No Lease call may outlast the renew deadline (undici alone would wait up to 5 minutes). */
  const callTimeoutMs = Math.max(100, Math.floor(renewDeadlineMs / 2));
  const retryMs = options.retryMs ?? 2000;
  let leading = false;
  let lastRenew = 0;
  /** The record last seen and when (our clock): the basis of expiry. */
  let observed: { resourceVersion: string | undefined; holder: string; at: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> | undefined;

  function set(next: boolean): void {
    if (next === leading) return;
    leading = next;
    log.info({ lease: `${namespace}/${name}`, identity }, next ? 'Became the leader' : 'Stopped leading');
    options.onChange(next);
  }

  function spec(previous: V1Lease['spec'] | undefined, acquiring: boolean): NonNullable<V1Lease['spec']> {
    const t = new V1MicroTime(now());
    return {
      holderIdentity: identity,
      leaseDurationSeconds: leaseSeconds,
      renewTime: t,
      acquireTime: acquiring ? t : (previous?.acquireTime ?? t),
      leaseTransitions: (previous?.leaseTransitions ?? 0) + (acquiring && previous ? 1 : 0),
    };
  }

  async function attempt(current: { expired: boolean }): Promise<void> {
    let lease: V1Lease | undefined;
    try {
      lease = await api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    if (!lease) {
      await api.createNamespacedLease({
        namespace,
        body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: spec(undefined, true) },
      });
      lastRenew = now();
      if (!current.expired) set(true);
      return;
    }
    const holder = lease.spec?.holderIdentity ?? '';
    const rv = lease.metadata?.resourceVersion;
    if (!observed || observed.resourceVersion !== rv) observed = { resourceVersion: rv, holder, at: now() };
    const duration = (lease.spec?.leaseDurationSeconds ?? leaseSeconds) * 1000;
    const mine = holder === identity;
    if (!mine && holder !== '' && observed.at + duration > now()) {
      set(false);
      return;
    }
    const acquiring = !mine;
    const res = await api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: spec(lease.spec, acquiring) } });
    observed = { resourceVersion: res.metadata?.resourceVersion, holder: identity, at: now() };
    lastRenew = now();
    if (acquiring) log.info({ lease: `${namespace}/${name}`, previous: holder || undefined }, 'Took over the Lease');
    if (!current.expired) set(true);
  }

  async function tick(): Promise<void> {
    try {
      let timer: NodeJS.Timeout | undefined;
      // A late answer of an attempt that timed out is ignored: the next attempt reads the Lease again.
      const current = { expired: false };
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          current.expired = true;
          reject(new Error(`Lease request took longer than ${callTimeoutMs} ms`));
        }, callTimeoutMs);
      });
      try {
        await Promise.race([attempt(current), timeout]);
      } finally {
        clearTimeout(timer);
      }
    } catch (err) {
      const status = statusOf(err);
      // 409: another candidate wrote first. Anything else: the API server is unreachable or refuses.
      if (status !== 409) log.warn({ lease: `${namespace}/${name}`, err: describeError(err) }, 'Leader election attempt failed');
      if (leading && now() - lastRenew > renewDeadlineMs) set(false);
      else if (status === 409 && leading) set(false);
    }
    if (!stopped) {
      timer = setTimeout(
        () => {
          running = tick();
        },
        leading ? renewMs : retryMs,
      );
    }
  }

  return {
    // A renewal that hangs must not leave two leaders: past the deadline this replica stops writing
    // even before the failed attempt returns.
    isLeader: () => {
      if (leading && now() - lastRenew > renewDeadlineMs) set(false);
      return leading;
    },
    async start() {
      running = tick();
      await running;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      if (!leading) return;
      try {
        const lease = await api.readNamespacedLease({ name, namespace });
        if (lease.spec?.holderIdentity === identity) {
          // Released the way client-go does: no holder, so a candidate takes it without waiting.
          await api.replaceNamespacedLease({
            name,
            namespace,
            body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime(now()) } },
          });
        }
      } catch (err) {
        log.warn(
          { lease: `${namespace}/${name}`, err: describeError(err) },
          'Could not release the Lease; another replica takes over when it expires',
        );
      }
      set(false);
    },
  };
}
