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

/** One candidate's settings and what it knows of the Lease, shared by the functions below. */
interface Election {
  readonly options: LeaderElectionOptions;
  readonly lease: string;
  readonly now: () => number;
  readonly leaseSeconds: number;
  readonly renewMs: number;
  readonly renewDeadlineMs: number;
  /** No Lease call may outlast the renew deadline (undici alone would wait up to 5 minutes). */
  readonly callTimeoutMs: number;
  readonly retryMs: number;
  leading: boolean;
  lastRenew: number;
  /** The record last seen and when (our clock): the basis of expiry. */
  observed: { resourceVersion: string | undefined; holder: string; at: number } | undefined;
  timer: NodeJS.Timeout | undefined;
  stopped: boolean;
  running: Promise<void> | undefined;
}

function createElection(options: LeaderElectionOptions): Election {
  const leaseSeconds = options.leaseSeconds ?? 15;
  // Must end before the Lease does, or another replica could lead while this one still writes.
  const renewDeadlineMs = Math.min(options.renewDeadlineMs ?? 10_000, (leaseSeconds * 1000 * 2) / 3);
  return {
    options,
    lease: `${options.namespace}/${options.name}`,
    now: options.now ?? (() => Date.now()),
    leaseSeconds,
    renewMs: options.renewMs ?? 5000,
    renewDeadlineMs,
    callTimeoutMs: Math.max(100, Math.floor(renewDeadlineMs / 2)),
    retryMs: options.retryMs ?? 2000,
    leading: false,
    lastRenew: 0,
    observed: undefined,
    timer: undefined,
    stopped: false,
    running: undefined,
  };
}

function setLeading(e: Election, next: boolean): void {
  if (next === e.leading) return;
  e.leading = next;
  e.options.log.info({ lease: e.lease, identity: e.options.identity }, next ? 'Became the leader' : 'Stopped leading');
  e.options.onChange(next);
}

function leaseSpec(e: Election, previous: V1Lease['spec'] | undefined, acquiring: boolean): NonNullable<V1Lease['spec']> {
  const t = new V1MicroTime(e.now());
  return {
    holderIdentity: e.options.identity,
    leaseDurationSeconds: e.leaseSeconds,
    renewTime: t,
    acquireTime: acquiring ? t : (previous?.acquireTime ?? t),
    leaseTransitions: (previous?.leaseTransitions ?? 0) + (acquiring && previous ? 1 : 0),
  };
}

/** Reads the Lease; creates it, renews it, or takes it over once it expired; leads unless the attempt timed out meanwhile. */
async function attempt(e: Election, current: { expired: boolean }): Promise<void> {
  const { api, namespace, name, identity, log } = e.options;
  let lease: V1Lease | undefined;
  try {
    lease = await api.readNamespacedLease({ name, namespace });
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
  }
  if (!lease) {
    await api.createNamespacedLease({
      namespace,
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: leaseSpec(e, undefined, true) },
    });
    e.lastRenew = e.now();
    if (!current.expired) setLeading(e, true);
    return;
  }
  const holder = lease.spec?.holderIdentity ?? '';
  const rv = lease.metadata?.resourceVersion;
  if (!e.observed || e.observed.resourceVersion !== rv) e.observed = { resourceVersion: rv, holder, at: e.now() };
  const duration = (lease.spec?.leaseDurationSeconds ?? e.leaseSeconds) * 1000;
  const mine = holder === identity;
  if (!mine && holder !== '' && e.observed.at + duration > e.now()) {
    setLeading(e, false);
    return;
  }
  const acquiring = !mine;
  const res = await api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: leaseSpec(e, lease.spec, acquiring) } });
  e.observed = { resourceVersion: res.metadata?.resourceVersion, holder: identity, at: e.now() };
  e.lastRenew = e.now();
  if (acquiring) log.info({ lease: e.lease, previous: holder || undefined }, 'Took over the Lease');
  if (!current.expired) setLeading(e, true);
}

/** One attempt, failed when it takes longer than callTimeoutMs. */
async function attemptInTime(e: Election): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  // A late answer of an attempt that timed out is ignored: the next attempt reads the Lease again.
  const current = { expired: false };
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      current.expired = true;
      reject(new Error(`Lease request took longer than ${e.callTimeoutMs} ms`));
    }, e.callTimeoutMs);
  });
  try {
    await Promise.race([attempt(e, current), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** One attempt, then the next one scheduled: renewMs while leading, retryMs otherwise. */
async function tick(e: Election): Promise<void> {
  try {
    await attemptInTime(e);
  } catch (err) {
    const status = statusOf(err);
    // 409: another candidate wrote first. Anything else: the API server is unreachable or refuses.
    if (status !== 409) e.options.log.warn({ lease: e.lease, err: describeError(err) }, 'Leader election attempt failed');
    if (e.leading && e.now() - e.lastRenew > e.renewDeadlineMs) setLeading(e, false);
    else if (status === 409 && e.leading) setLeading(e, false);
  }
  if (!e.stopped) {
    e.timer = setTimeout(
      () => {
        e.running = tick(e);
      },
      e.leading ? e.renewMs : e.retryMs,
    );
  }
}

/** Released the way client-go does: no holder, so a candidate takes it without waiting. */
async function release(e: Election): Promise<void> {
  const { api, namespace, name, identity, log } = e.options;
  try {
    const lease = await api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity === identity) {
      await api.replaceNamespacedLease({
        name,
        namespace,
        body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime(e.now()) } },
      });
    }
  } catch (err) {
    log.warn({ lease: e.lease, err: describeError(err) }, 'Could not release the Lease; another replica takes over when it expires');
  }
}

/** A candidate for the Lease `namespace/name`: nothing happens before start(). */
export function createLeaderElector(options: LeaderElectionOptions): LeaderElector {
  const e = createElection(options);
  return {
    // A renewal that hangs must not leave two leaders: past the deadline this replica stops writing
    // even before the failed attempt returns.
    isLeader: () => {
      if (e.leading && e.now() - e.lastRenew > e.renewDeadlineMs) setLeading(e, false);
      return e.leading;
    },
    async start() {
      e.running = tick(e);
      await e.running;
    },
    async stop() {
      e.stopped = true;
      if (e.timer) clearTimeout(e.timer);
      await e.running;
      if (!e.leading) return;
      await release(e);
      setLeading(e, false);
    },
  };
}
