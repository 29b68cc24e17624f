// Held long polls: memory per held bundle request, and how long after a change every one of them has
// its new bundle. A fresh service (10 rules) on the server core, the client on the load core.
import { fileURLToPath } from 'node:url';
import { spawnPinned } from './ipc.ts';
import type { LongPollCommands } from './longpoll-client.ts';
import type { ServerStats } from './servers/stats.ts';
import { BUNDLE_PATH } from './tenant.ts';
import { LOADGEN_CORE } from './cores.ts';
import { startService, type Service } from './variants.ts';

export interface LongPollResult {
  readonly requested: number;
  readonly held: number;
  readonly openMs: number;
  /** Growth per held request, after a full collection. */
  readonly rssPerHeld: number;
  readonly heapPerHeld: number;
  readonly externalPerHeld: number;
  /** From the change command reaching the service to the first 200 reaching the client (re-read, rebuild). */
  readonly firstMs: number;
  /** From the change command reaching the service to the last 200 reaching the client. */
  readonly releaseMs: number;
  readonly answered: number;
  readonly statusCodes: Readonly<Record<string, number>>;
  readonly errors: number;
}

const BATCH = 400;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, timeoutMs: number, read: () => Promise<T>, done: (t: T) => boolean): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${JSON.stringify(value)}`);
    await sleep(10);
  }
}

async function currentEtag(service: Service): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${service.ready.port}${BUNDLE_PATH}`, {
    headers: { Authorization: `Bearer ${service.ready.token}` },
  });
  await res.arrayBuffer();
  const etag = res.headers.get('etag');
  if (res.status !== 200 || etag === null) throw new Error(`the bundle endpoint answered ${res.status}`);
  return etag;
}

/** Holds `count` bundle requests with `Prefer: wait=<waitS>`, measures, then changes a rule. */
export async function measureLongPolls(count: number, waitS: number): Promise<LongPollResult> {
  const service = await startService(10);
  const client = await spawnPinned<LongPollCommands, unknown>(
    LOADGEN_CORE,
    fileURLToPath(new URL('./longpoll-client.ts', import.meta.url)),
  );
  try {
    const spec = { port: service.ready.port, path: BUNDLE_PATH, token: service.ready.token, waitS };
    const held =
      (n: number) =>
      (s: ServerStats): boolean =>
        s.heldLongPolls >= n;
    // A batch at a time, and the next only once the server holds the last: a batch larger than the
    // listen backlog (Node's default, 511), or one sent before the server accepted the previous,
    // overflows the accept queue and its SYNs are retried a second later.
    const hold = async (etag: string, n: number): Promise<number> => {
      let opened = 0;
      for (let i = 0; i < n; i += BATCH) {
        opened += (await client.call('open', { ...spec, etag, count: Math.min(BATCH, n - i) })).opened;
        await until(`${opened} held requests`, 30_000, () => service.call('stats', null), held(opened));
      }
      return opened;
    };
    // One small cycle first, so code is compiled and pools exist before the baseline is taken.
    await hold(await currentEtag(service), BATCH);
    await service.call('change', null);
    await until(
      `${BATCH} answers`,
      10_000,
      () => client.call('answers', null),
      (a) => a.answered >= BATCH,
    );
    await client.call('close', null);
    await sleep(200);

    const etag = await currentEtag(service);
    const base = await service.call('gcStats', null);
    const t0 = performance.now();
    const opened = await hold(etag, count);
    const openMs = performance.now() - t0;
    const loaded = await service.call('gcStats', null);
    const change = await service.call('change', null);
    const answers = await until(
      `${opened} answers`,
      30_000,
      () => client.call('answers', null),
      (a) => a.answered + a.errors >= opened,
    );
    await client.call('close', null);
    return {
      requested: count,
      held: loaded.heldLongPolls,
      openMs,
      rssPerHeld: (loaded.rssBytes - base.rssBytes) / loaded.heldLongPolls,
      heapPerHeld: (loaded.heapUsedBytes - base.heapUsedBytes) / loaded.heldLongPolls,
      externalPerHeld: (loaded.externalBytes - base.externalBytes) / loaded.heldLongPolls,
      firstMs: answers.first200Ms - change.receivedMs,
      releaseMs: answers.last200Ms - change.receivedMs,
      answered: answers.answered,
      statusCodes: answers.statusCodes,
      errors: answers.errors,
    };
  } finally {
    await Promise.all([client.stop(), service.stop()]);
  }
}
