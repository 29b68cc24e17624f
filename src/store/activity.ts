// Sync activity (service spec 2.5): every bundle request, in a bounded log per bundle.
import { createKeyedRings } from './rings.ts';

export interface SyncRecord {
  /** ISO 8601 */
  readonly time: string;
  readonly revision: number | undefined;
  readonly clientIp: string;
  readonly userAgent: string;
  readonly status: number;
}

/** A record as it is taken on the request path: the time stays a number until someone reads it. */
export interface SyncEvent extends Omit<SyncRecord, 'time'> {
  readonly timeMs: number;
}

export interface ActivityLog {
  record(key: string, entry: SyncEvent): void;
  /** Newest first. */
  list(key: string): readonly SyncRecord[];
  /** Time of the newest 200 or 304 answer for a bundle. */
  lastSync(key: string): string | undefined;
  /** Keys recorded since the last call (for writing them out), cleared by the call. */
  takeChanged(): string[];
  forget(key: string): void;
  /** Records taken since start: moves with every request recorded (the console's live updates). */
  count(): number;
  /** Records taken for one bundle (`<tenant>/<bundle>`) since it was first recorded or forgotten: a tenant's live updates. */
  countOf(key: string): number;
  /** Loads earlier records (newest first), e.g. from the state folder at start. */
  restore(key: string, entries: readonly SyncRecord[]): void;
}

/** A ring of the newest `capacity` records per bundle. */
export function createActivityLog(capacity = 100): ActivityLog {
  const rings = createKeyedRings<SyncEvent>(capacity);
  const lastSyncMs = new Map<string, number>();
  const load = (key: string, entry: SyncEvent): void => {
    rings.load(key, entry);
    if (entry.status === 200 || entry.status === 304) lastSyncMs.set(key, entry.timeMs);
  };
  return {
    record(key, entry) {
      rings.add(key, entry);
      if (entry.status === 200 || entry.status === 304) lastSyncMs.set(key, entry.timeMs);
    },
    list: (key) => rings.newestFirst(key).map(({ timeMs, ...rest }) => ({ time: new Date(timeMs).toISOString(), ...rest })),
    lastSync: (key) => {
      const ms = lastSyncMs.get(key);
      return ms === undefined ? undefined : new Date(ms).toISOString();
    },
    takeChanged: () => rings.takeChanged(),
    count: () => rings.added(),
    countOf: (key) => rings.addedTo(key),
    forget(key) {
      rings.forget(key);
      lastSyncMs.delete(key);
    },
    restore(key, entries) {
      for (const { time, ...rest } of [...entries].slice(0, capacity).reverse()) {
        const timeMs = Date.parse(time);
        if (Number.isFinite(timeMs)) load(key, { timeMs, ...rest });
      }
    },
  };
}
