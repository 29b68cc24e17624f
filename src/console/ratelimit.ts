// Sign-in attempts are rate-limited (issue 16, "Access"): a token bucket per client IP, so one client
// cannot guess keys quickly, and one for everyone, so many clients together cannot either (behind
// `kubectl port-forward` every client is 127.0.0.1, and the overall bucket is what holds). A refusal says
// when to come back, for a 429's Retry-After. The clock is injected.

/** A bucket: up to `burst` attempts at once, refilled at `perMinute` attempts a minute. */
export interface BucketLimit {
  readonly perMinute: number;
  readonly burst: number;
}

export interface SignInLimitOptions {
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  readonly perIp?: BucketLimit;
  readonly overall?: BucketLimit;
  /** How many client IPs are tracked at most (default 10,000); the least recently seen are forgotten first. */
  readonly maxTrackedIps?: number;
}

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly retryAfterSeconds: number };

export interface SignInLimiter {
  /** Counts one sign-in attempt from `ip` when both buckets allow it; a refused attempt takes nothing. */
  attempt(ip: string): Verdict;
  /** The attempt of `ip` used a right key: its token comes back (only wrong keys count against the limit). */
  succeeded(ip: string): void;
  /** How many IPs are tracked now. */
  trackedIps(): number;
}

export const SIGN_IN_PER_IP: BucketLimit = { perMinute: 5, burst: 5 };
export const SIGN_IN_OVERALL: BucketLimit = { perMinute: 60, burst: 60 };
const MAX_TRACKED_IPS = 10_000;

// Tokens are counted in sixty-thousandths, so a refill of `elapsed ms × perMinute` is exact in integers
// and a token comes back exactly when it is due, not a float's rounding later.
const TOKEN = 60_000;

interface Bucket {
  units: number;
  atMs: number;
}

/** The bucket refilled up to `now` (a clock that steps back refills nothing). */
function refill(bucket: Bucket, limit: BucketLimit, now: number): Bucket {
  const elapsed = Math.max(0, now - bucket.atMs);
  return { units: Math.min(limit.burst * TOKEN, bucket.units + elapsed * limit.perMinute), atMs: Math.max(now, bucket.atMs) };
}

/** Whole seconds until the bucket holds one token (at least 1). */
function secondsUntilOne(bucket: Bucket, limit: BucketLimit): number {
  return Math.max(1, Math.ceil((TOKEN - bucket.units) / limit.perMinute / 1000));
}

function checkLimit(limit: BucketLimit, name: string): void {
  if (!(Number.isSafeInteger(limit.perMinute) && limit.perMinute > 0 && Number.isSafeInteger(limit.burst) && limit.burst >= 1)) {
    throw new Error(`${name}: perMinute and burst must be whole numbers of at least 1 (got ${JSON.stringify(limit)})`);
  }
}

/** The sign-in limiter: 5 a minute per IP (burst 5) and 60 a minute overall (burst 60) unless told otherwise. */
export function createSignInLimiter(options: SignInLimitOptions): SignInLimiter {
  const perIp = options.perIp ?? SIGN_IN_PER_IP;
  const overall = options.overall ?? SIGN_IN_OVERALL;
  const maxIps = options.maxTrackedIps ?? MAX_TRACKED_IPS;
  checkLimit(perIp, 'perIp');
  checkLimit(overall, 'overall');
  // Insertion order is recency order: an attempt moves its IP to the end.
  const ips = new Map<string, Bucket>();
  let all: Bucket = { units: overall.burst * TOKEN, atMs: options.now() };

  function forgetSome(now: number): void {
    // A full bucket says nothing a new one would not: forget those first, then the least recently seen.
    for (const [ip, bucket] of ips) if (refill(bucket, perIp, now).units >= perIp.burst * TOKEN) ips.delete(ip);
    while (ips.size >= maxIps) {
      const oldest = ips.keys().next().value;
      if (oldest === undefined) break;
      ips.delete(oldest);
    }
  }

  return {
    attempt(ip) {
      const now = options.now();
      const known = ips.get(ip);
      if (known === undefined && ips.size >= maxIps) forgetSome(now);
      const mine = refill(known ?? { units: perIp.burst * TOKEN, atMs: now }, perIp, now);
      all = refill(all, overall, now);
      ips.delete(ip);
      ips.set(ip, mine);
      if (mine.units < TOKEN) return { ok: false, retryAfterSeconds: secondsUntilOne(mine, perIp) };
      if (all.units < TOKEN) return { ok: false, retryAfterSeconds: secondsUntilOne(all, overall) };
      mine.units -= TOKEN;
      all.units -= TOKEN;
      return { ok: true };
    },
    succeeded(ip) {
      // A right key gives its token back: the limit is on guessing, not on people signing in.
      const mine = ips.get(ip);
      if (mine) mine.units = Math.min(perIp.burst * TOKEN, mine.units + TOKEN);
      all.units = Math.min(overall.burst * TOKEN, all.units + TOKEN);
    },
    trackedIps: () => ips.size,
  };
}
