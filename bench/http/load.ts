// What the load generator is asked to send and what it reports back.

export interface HttpRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export interface LoadSpec {
  readonly port: number;
  /** Sent in turn, over and over. */
  readonly requests: readonly HttpRequest[];
  readonly connections: number;
  readonly durationS: number;
}

export interface LoadResult {
  readonly responses: number;
  readonly durationS: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The slowest response (our generator; autocannon reports its own). */
  readonly maxMs: number;
  /** Responses by status code; anything unexpected makes the run suspect. */
  readonly statusCodes: Readonly<Record<string, number>>;
  readonly errors: number;
  /** CPU the load generator itself used, as a share of one core: near 1 means it may be the limit. */
  readonly loadgenCpu: number;
  /** Paced runs: requests that found every connection busy (the server fell behind the rate). */
  readonly late: number;
}

/** The value below which `p` of the samples fall (nearest rank). */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

/** A growable list of latencies, sorted once at the end. */
export function latencyRecorder(): { add(ms: number): void; sorted(): Float64Array; count(): number } {
  let values = new Float64Array(1 << 16);
  let n = 0;
  return {
    add(ms) {
      if (n === values.length) {
        const bigger = new Float64Array(values.length * 2);
        bigger.set(values);
        values = bigger;
      }
      values[n++] = ms;
    },
    sorted: () => values.slice(0, n).sort(),
    count: () => n,
  };
}
