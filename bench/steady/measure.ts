// The runs of the steady-under-change benchmark, for either mode: saturation and a fixed load
// (half the quiet saturation rate), quiet and while an editor changes one rule every second (and,
// optionally, one Directory entity), with each edit's time until the bundle served it.
import type { Pinned } from '../http/ipc.ts';
import type { HttpRequest, LoadResult } from '../http/load.ts';
import type { LoadCommands } from '../http/loadgen.ts';
import { fmt } from '../http/report.ts';

export const CONNECTIONS = 10;
const CHANGE_EVERY_MS = 1000;
const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** A bundle to watch and what changes it. */
export interface Editor {
  readonly port: number;
  readonly path: string;
  readonly token: string;
  /** Makes change number `n` (1, 2, ...) and resolves once it is written (file or API). */
  edit(n: number): Promise<void>;
}

/** Waits (long poll) until the bundle's ETag differs from `etag`; returns the new one and when it came. */
export async function nextEtag(port: number, path: string, token: string, etag: string): Promise<{ etag: string; atMs: number }> {
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      headers: { Authorization: `Bearer ${token}`, 'If-None-Match': etag, Prefer: 'wait=30' },
    });
    await res.arrayBuffer();
    const now = performance.now();
    const tag = res.headers.get('etag') ?? '';
    if (res.status === 200 && tag !== etag) return { etag: tag, atMs: now };
    if (res.status !== 304) throw new Error(`bundle ${path} answered ${res.status}`);
  }
}

export async function currentEtag(port: number, path: string, token: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`bundle ${path} answered ${res.status}`);
  return res.headers.get('etag') ?? '';
}

/** One change every second until `until` settles; each change's time from written to served. */
async function editLoop(editor: Editor, until: Promise<unknown>, first: number): Promise<number[]> {
  const times: number[] = [];
  let done = false;
  void until.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  let etag = await currentEtag(editor.port, editor.path, editor.token);
  for (let n = first; !done; n++) {
    const started = performance.now();
    await editor.edit(n);
    const written = performance.now();
    const next = await nextEtag(editor.port, editor.path, editor.token, etag);
    etag = next.etag;
    times.push(next.atMs - written);
    const wait = CHANGE_EVERY_MS - (performance.now() - started);
    if (wait > 0 && !done)
      await new Promise((resolve) => {
        setTimeout(resolve, wait);
      });
  }
  return times;
}

export interface SteadyResult {
  readonly satQuiet: LoadResult;
  readonly satChange: LoadResult;
  readonly satEdits: number;
  readonly rate: number;
  readonly pacedQuiet: LoadResult;
  readonly pacedChange: LoadResult;
  readonly changeTimes: readonly number[];
  readonly pacedDirectory?: LoadResult;
  readonly directoryTimes?: readonly number[];
}

export async function measureSteady(o: {
  loadgen: Pinned<LoadCommands, unknown>;
  port: number;
  requests: readonly HttpRequest[];
  runS: number;
  warmupS: number;
  rules: Editor;
  directory?: Editor | undefined;
}): Promise<SteadyResult> {
  const spec = { port: o.port, requests: o.requests, connections: CONNECTIONS, durationS: o.runS };
  progress('warming up');
  await o.loadgen.call('saturate', { ...spec, durationS: o.warmupS });
  progress('saturation, quiet');
  const satQuiet = await o.loadgen.call('saturate', spec);
  progress('saturation, a rule edited every second');
  const satRun = o.loadgen.call('saturate', spec);
  const satEditing = editLoop(o.rules, satRun, 1);
  const satChange = await satRun;
  const satTimes = await satEditing;
  const rate = Math.max(100, Math.floor((0.5 * satQuiet.rps) / 100) * 100);
  progress(`fixed load at ${rate} req/s, quiet`);
  const pacedQuiet = await o.loadgen.call('paced', { ...spec, rate });
  progress(`fixed load at ${rate} req/s, a rule edited every second`);
  const pacedRun = o.loadgen.call('paced', { ...spec, rate });
  const pacedEditing = editLoop(o.rules, pacedRun, satTimes.length + 1);
  const pacedChange = await pacedRun;
  const changeTimes = await pacedEditing;
  if (!o.directory) return { satQuiet, satChange, satEdits: satTimes.length, rate, pacedQuiet, pacedChange, changeTimes };
  progress(`fixed load at ${rate} req/s, one Directory entity of 500,000 edited every second`);
  const dirRun = o.loadgen.call('paced', { ...spec, rate });
  const dirEditing = editLoop(o.directory, dirRun, 1);
  const pacedDirectory = await dirRun;
  const directoryTimes = await dirEditing;
  return { satQuiet, satChange, satEdits: satTimes.length, rate, pacedQuiet, pacedChange, changeTimes, pacedDirectory, directoryTimes };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.floor((s.length - 1) / 2)] as number);
};
const max = (xs: readonly number[]): number => (xs.length === 0 ? NaN : Math.max(...xs));
const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');

/** The table and the goals, as docs/benchmarks.md quotes them. */
export function report(r: SteadyResult, runS: number, editsNote: string): string[] {
  const line = (label: string, x: LoadResult): string =>
    `| ${label} | ${fmt(x.rps)} | ${fmt(x.p50Ms, 2)} | ${fmt(x.p99Ms, 2)} | ${fmt(x.maxMs, 1)} | ${x.late} | ${Object.entries(x.statusCodes)
      .map(([c, n]) => `${c}×${n}`)
      .join(' ')} |`;
  const out = [
    `${CONNECTIONS} connections of POST /authorization against a tenant of 10,000 rules, ${runS} s per run`,
    '| run | req/s | p50 ms | p99 ms | max ms | late | statuses |',
    '|---|---|---|---|---|---|---|',
    line('saturation, quiet', r.satQuiet),
    line(`saturation, a rule edited every second (${r.satEdits} edits)`, r.satChange),
    line(`${r.rate} req/s, quiet`, r.pacedQuiet),
    line(`${r.rate} req/s, a rule edited every second (${r.changeTimes.length} edits)`, r.pacedChange),
  ];
  if (r.pacedDirectory)
    out.push(line(`${r.rate} req/s, a Directory entity edited every second (${r.directoryTimes?.length ?? 0} edits)`, r.pacedDirectory));
  const p99 = r.pacedChange.p99Ms / r.pacedQuiet.p99Ms;
  const thr = r.satChange.rps / r.satQuiet.rps;
  out.push(
    '',
    `goal p99 under change ≤ 2 × quiet: ${fmt(p99, 2)}× ${verdict(p99 <= 2)}`,
    `goal no decision slower than 50 ms under change: max ${fmt(r.pacedChange.maxMs, 1)} ms ${verdict(r.pacedChange.maxMs <= 50)}`,
    `goal throughput under change ≥ 0.9 × quiet: ${fmt(thr, 3)}× ${verdict(thr >= 0.9)}`,
    `rule edit to served (${editsNote}): median ${fmt(median(r.changeTimes))} ms, max ${fmt(max(r.changeTimes))} ms`,
  );
  if (r.pacedDirectory) {
    const d = r.pacedDirectory.p99Ms / r.pacedQuiet.p99Ms;
    out.push(
      `goal with Directory edits: p99 ${fmt(d, 2)}× quiet ${verdict(d <= 2)}, max ${fmt(r.pacedDirectory.maxMs, 1)} ms ${verdict(r.pacedDirectory.maxMs <= 50)}`,
      `goal Directory entity edit to served < 1 s (${editsNote}): median ${fmt(median(r.directoryTimes ?? []))} ms ${verdict(median(r.directoryTimes ?? []) < 1000)}, max ${fmt(max(r.directoryTimes ?? []))} ms`,
    );
  }
  return out;
}

export { median, max, verdict };
