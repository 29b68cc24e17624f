// Saturation measured with autocannon instead of bench/http/generator.ts (BENCH_LOADGEN=autocannon):
// every connection kept busy, one request in flight each, no pipelining.
import autocannon from 'autocannon';
import { latencyRecorder, percentile, type LoadResult, type LoadSpec } from './load.ts';

export async function saturateWithAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const latencies = latencyRecorder();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const run = autocannon({
    url: `http://127.0.0.1:${spec.port}`,
    connections: spec.connections,
    duration: spec.durationS,
    pipelining: 1,
    timeout: 10,
    requests: spec.requests.map((r) => ({
      method: r.method,
      path: r.path,
      headers: { ...r.headers },
      ...(r.body === undefined ? {} : { body: r.body }),
    })),
  });
  // autocannon's own histogram keeps whole milliseconds; its event carries the exact time.
  run.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.add(ms));
  const result = await run;
  const wallS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sorted = latencies.sorted();
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  return {
    responses: sorted.length,
    durationS: result.duration,
    rps: sorted.length / result.duration,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    maxMs: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : NaN,
    statusCodes,
    errors: result.errors + result.timeouts,
    loadgenCpu: (cpu.user + cpu.system) / 1e6 / wallS,
    late: 0,
  };
}
