// Sync activity (service spec 2.5): every bundle request, in a bounded log per bundle.

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
  /** Loads earlier records (newest first), e.g. from the state folder at start. */
  restore(key: string, entries: readonly SyncRecord[]): void;
}

/** A ring of the newest `capacity` records per bundle. */
export function createActivityLog(capacity = 100): ActivityLog {
  const rings = new Map<string, { items: SyncEvent[]; next: number; lastSyncMs: number | undefined }>();
  const changed = new Set<string>();
  const ring = (key: string) => {
    let r = rings.get(key);
    if (!r) {
      r = { items: [], next: 0, lastSyncMs: undefined };
      rings.set(key, r);
    }
    return r;
  };
  const list = (key: string): SyncRecord[] => {
    const r = rings.get(key);
    if (!r) return [];
    const ordered: SyncEvent[] = r.items.length < capacity ? r.items.slice() : [...r.items.slice(r.next), ...r.items.slice(0, r.next)];
    return ordered.reverse().map(({ timeMs, ...rest }) => ({ time: new Date(timeMs).toISOString(), ...rest }));
  };
  const push = (key: string, entry: SyncEvent): void => {
    const r = ring(key);
    if (r.items.length < capacity) r.items.push(entry);
    else r.items[r.next] = entry;
    r.next = (r.next + 1) % capacity;
    if (entry.status === 200 || entry.status === 304) r.lastSyncMs = entry.timeMs;
  };
  return {
    record(key, entry) {
      push(key, entry);
      changed.add(key);
    },
    list,
    lastSync: (key) => {
      const ms = rings.get(key)?.lastSyncMs;
      return ms === undefined ? undefined : new Date(ms).toISOString();
    },
    takeChanged() {
      const keys = [...changed];
      changed.clear();
      return keys;
    },
    forget(key) {
      rings.delete(key);
      changed.delete(key);
    },
    restore(key, entries) {
      for (const { time, ...rest } of [...entries].slice(0, capacity).reverse()) {
        const timeMs = Date.parse(time);
        if (Number.isFinite(timeMs)) push(key, { timeMs, ...rest });
      }
    },
  };
}
