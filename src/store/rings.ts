// Bounded logs per key: the newest `capacity` items of each key, and which keys were added to since
// they were last written out. Sync activity (store/activity.ts) and the recent decisions OPA reports
// (fleet/recent.ts) are both kept this way.

export interface KeyedRings<T> {
  /** Adds an item and marks its key changed. */
  add(key: string, item: T): void;
  /** Adds an item loaded from earlier (the state folder at start): its key is not marked changed. */
  load(key: string, item: T): void;
  /** The key's items, newest first. */
  newestFirst(key: string): T[];
  /** Keys added to since the last call (for writing them out), cleared by the call. */
  takeChanged(): string[];
  forget(key: string): void;
  /** Items added since the rings were made (moves with every add; loads do not count). */
  added(): number;
  /** Items added to `key` since it was first added to or last forgotten (loads do not count). */
  addedTo(key: string): number;
}

/** Rings of at most `capacity` items per key, overwriting the oldest. */
export function createKeyedRings<T>(capacity: number): KeyedRings<T> {
  const rings = new Map<string, { items: T[]; next: number; added: number }>();
  const changed = new Set<string>();
  let added = 0;
  const load = (key: string, item: T): { added: number } => {
    let r = rings.get(key);
    if (!r) {
      r = { items: [], next: 0, added: 0 };
      rings.set(key, r);
    }
    if (r.items.length < capacity) r.items.push(item);
    else r.items[r.next] = item;
    r.next = (r.next + 1) % capacity;
    return r;
  };
  return {
    add(key, item) {
      // Counted on the ring already at hand: a bundle poll pays one increment for its tenant's live updates.
      load(key, item).added++;
      changed.add(key);
      added++;
    },
    added: () => added,
    addedTo: (key) => rings.get(key)?.added ?? 0,
    load,
    newestFirst(key) {
      const r = rings.get(key);
      if (!r) return [];
      const ordered = r.items.length < capacity ? r.items.slice() : [...r.items.slice(r.next), ...r.items.slice(0, r.next)];
      return ordered.reverse();
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
  };
}
