// Held bundle requests (OPA long polling). A waiter is one small object in two sets: its bundle's
// (a publish releases them all at once) and its deadline bucket's (one timer per 50 ms bucket, not
// per request, and no polling of the store).

export type Release = 'changed' | 'timeout' | 'shutdown';

interface Waiter {
  readonly key: string;
  readonly bucket: number;
  readonly release: (why: Release) => void;
}

export interface LongPolls {
  /** Holds a request for `waitMs`; `release` is called exactly once. Returns a cancel (client gone). */
  hold(key: string, waitMs: number, release: (why: Release) => void): () => void;
  /** Releases every waiter of a bundle whose content changed. */
  changed(key: string): void;
  /** Releases everything (shutdown). */
  releaseAll(): void;
  size(): number;
}

export const BUCKET_MS = 50;

export interface LongPollOptions {
  /** Told the number of held requests whenever it changes (a gauge). */
  readonly onSize?: (size: number) => void;
  /** Milliseconds since the epoch, for deadlines (default Date.now). */
  readonly now?: () => number;
}

/** Held requests, released by a change of their bundle, their deadline or shutdown, each exactly once. */
export function createLongPolls(options: LongPollOptions = {}): LongPolls {
  const now = options.now ?? Date.now;
  const byKey = new Map<string, Set<Waiter>>();
  const buckets = new Map<number, { waiters: Set<Waiter>; timer: NodeJS.Timeout }>();
  let size = 0;

  const remove = (w: Waiter): boolean => {
    const set = byKey.get(w.key);
    if (!set?.delete(w)) return false;
    if (set.size === 0) byKey.delete(w.key);
    const bucket = buckets.get(w.bucket);
    if (bucket) {
      bucket.waiters.delete(w);
      if (bucket.waiters.size === 0) {
        clearTimeout(bucket.timer);
        buckets.delete(w.bucket);
      }
    }
    size--;
    options.onSize?.(size);
    return true;
  };
  const fire = (w: Waiter, why: Release): void => {
    if (remove(w)) w.release(why);
  };

  return {
    hold(key, waitMs, release) {
      const bucketId = Math.ceil((now() + waitMs) / BUCKET_MS);
      const w: Waiter = { key, bucket: bucketId, release };
      let set = byKey.get(key);
      if (!set) {
        set = new Set();
        byKey.set(key, set);
      }
      set.add(w);
      let bucket = buckets.get(bucketId);
      if (!bucket) {
        const timer = setTimeout(
          () => {
            const b = buckets.get(bucketId);
            if (b) for (const x of [...b.waiters]) fire(x, 'timeout');
          },
          Math.max(0, bucketId * BUCKET_MS - now()),
        );
        bucket = { waiters: new Set(), timer };
        buckets.set(bucketId, bucket);
      }
      bucket.waiters.add(w);
      size++;
      options.onSize?.(size);
      return () => {
        remove(w);
      };
    },
    changed(key) {
      const set = byKey.get(key);
      if (set) for (const w of [...set]) fire(w, 'changed');
    },
    releaseAll() {
      for (const set of [...byKey.values()]) for (const w of [...set]) fire(w, 'shutdown');
    },
    size: () => size,
  };
}

/**
 * The `wait` preference of a Prefer header (RFC 7240), as OPA sends it (`wait=30`, or
 * `modes=long-polling;wait=30`), in seconds; undefined when absent or not a positive integer.
 */
export function preferWait(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const m = /(?:^|[\s,;])wait[ \t]*=[ \t]*"?(\d{1,9})"?(?=$|[\s,;])/i.exec(header);
  if (!m) return undefined;
  const seconds = Number(m[1]);
  return seconds > 0 ? seconds : undefined;
}
