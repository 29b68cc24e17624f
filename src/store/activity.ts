// Sync activity (service spec 2.5): every bundle request, in a bounded log per bundle.

export interface SyncRecord {
  /** ISO 8601 */
  readonly time: string;
  readonly revision: number | undefined;
  readonly clientIp: string;
  readonly userAgent: string;
  readonly status: number;
}

export interface ActivityLog {
  record(key: string, entry: SyncRecord): void;
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
  const rings = new Map<string, { items: SyncRecord[]; next: number; lastSync: string | undefined }>();
  const changed = new Set<string>();
  const ring = (key: string) => {
    let r = rings.get(key);
    if (!r) { r = { items: [], next: 0, lastSync: undefined }; rings.set(key, r); }
    return r;
  };
  const list = (key: string): SyncRecord[] => {
    const r = rings.get(key);
    if (!r) return [];
    const ordered = r.items.length < capacity ? r.items.slice() : [...r.items.slice(r.next), ...r.items.slice(0, r.next)];
    return ordered.reverse();
  };
  const push = (key: string, entry: SyncRecord): void => {
    const r = ring(key);
    if (r.items.length < capacity) r.items.push(entry); else r.items[r.next] = entry;
    r.next = (r.next + 1) % capacity;
    if (entry.status === 200 || entry.status === 304) r.lastSync = entry.time;
  };
  return {
    record(key, entry) { push(key, entry); changed.add(key); },
    list,
    lastSync: (key) => rings.get(key)?.lastSync,
    takeChanged() { const keys = [...changed]; changed.clear(); return keys; },
    forget(key) { rings.delete(key); changed.delete(key); },
    restore(key, entries) { for (const e of [...entries].slice(0, capacity).reverse()) push(key, e); },
  };
}
