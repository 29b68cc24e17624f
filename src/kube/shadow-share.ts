// This replica's shadow tallies in its sharing ConfigMap (next to its agents, sharing.ts), so the
// leader sums every replica's counts into Rule status (docs/rules.md, "Shadow decisions"). Gzip JSON,
// bounded: past the budget the examples go first, then the tallies heard of least recently (a tally
// left out only waits: the leader keeps what it summed of it, and adds the rest when it fits again).
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ShadowHub, SharedTallies } from '../shadow/index.ts';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** The ConfigMap key of the tallies. */
export const SHADOW_KEY = 'shadow.json.gz';
/** The tallies' share of the ConfigMap's 1 MiB (the agents have the rest, sharing.ts). */
export const MAX_SHADOW_BYTES = 128 * 1024;

const Count = z.number().int().min(0);
/** A time in ms since the epoch that a date holds: status writes it as ISO 8601, which throws past ±8.64e15. */
const Ms = z.number().int().min(0).max(8.64e15);
const SharedTally = z.object({
  tenant: z.string().max(253),
  rule: z.string().max(253),
  role: z.enum(['Proposed', 'Removal']),
  evaluated: Count,
  matched: Count,
  flips: Count,
  firstMs: Ms.optional(),
  lastMs: Ms.optional(),
  lastFlipMs: Ms.optional(),
  examples: z
    .array(z.object({ time: z.string().max(64), input: z.string().max(1024) }))
    .max(3)
    .optional(),
});
const SharedData = z.object({ v: z.literal(1), session: z.string().max(128), tallies: z.array(SharedTally).max(100_000) });

type Flat = z.infer<typeof SharedTally>;

const flat = ({ tenant, rule, tally }: SharedTallies['tallies'][number], examples: boolean): Flat => ({
  tenant,
  rule,
  role: tally.role,
  evaluated: tally.evaluated,
  matched: tally.matched,
  flips: tally.flips,
  firstMs: tally.firstMs,
  lastMs: tally.lastMs,
  lastFlipMs: tally.lastFlipMs,
  ...(examples && tally.examples.length > 0 ? { examples: [...tally.examples] } : {}),
});

/** The tallies as the ConfigMap carries them, at most `maxBytes`; `kept` of `total` made it in, `examples` whether they did. */
export async function encodeTallies(
  shared: SharedTallies,
  maxBytes = MAX_SHADOW_BYTES,
): Promise<{ zipped: Buffer; total: number; kept: number; examples: boolean }> {
  const encode = (tallies: readonly Flat[]): Promise<Buffer> => gzipAsync(JSON.stringify({ v: 1, session: shared.session, tallies }));
  const total = shared.tallies.length;
  let zipped = await encode(shared.tallies.map((t) => flat(t, true)));
  if (zipped.length <= maxBytes) return { zipped, total, kept: total, examples: true };
  const bare = shared.tallies.map((t) => flat(t, false)).sort((a, b) => (b.lastMs ?? 0) - (a.lastMs ?? 0));
  let kept = total;
  zipped = await encode(bare);
  // Halved until they fit, down to none: past the budget the ConfigMap (agents too) would not be written.
  while (zipped.length > maxBytes && kept > 0) {
    kept = Math.floor(kept / 2);
    zipped = await encode(bare.slice(0, kept));
  }
  return { zipped, total, kept, examples: false };
}

/** A peer's tallies from its ConfigMap (base64 gzip JSON); throws when they do not read. */
async function peerTallies(data: string): Promise<SharedTallies> {
  const text = (await gunzipAsync(Buffer.from(data, 'base64'), { maxOutputLength: 64 * 1024 * 1024 })).toString('utf8');
  const parsed = SharedData.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? 'not shadow data');
  return {
    session: parsed.data.session,
    tallies: parsed.data.tallies.map((t) => ({
      tenant: t.tenant,
      rule: t.rule,
      tally: {
        role: t.role,
        evaluated: t.evaluated,
        matched: t.matched,
        flips: t.flips,
        firstMs: t.firstMs,
        lastMs: t.lastMs,
        lastFlipMs: t.lastFlipMs,
        examples: t.examples ?? [],
      },
    })),
  };
}

/** A peer's tallies to the hub (none: it counts nothing now); ones that do not read are logged and ignored. */
export async function handOver(hub: Pick<ShadowHub, 'setPeer'>, log: Logger, replica: string, data: string | undefined): Promise<void> {
  try {
    hub.setPeer(replica, data === undefined ? undefined : await peerTallies(data));
  } catch (err) {
    log.warn(
      { replica, err: err instanceof Error ? err.message : String(err) },
      'Ignored the shadow tallies of a peer replica: they do not read',
    );
  }
}

/** Hands a peer's ConfigMap to the hub: its data (undefined: none), and whether the ConfigMap is gone. */
export type ShadowHandOver = (replica: string, data: string | undefined, gone: boolean) => void;

/**
 * handOver in the order the ConfigMaps changed, one replica at a time (reading one is asynchronous):
 * a slow read of an update never lands after a later one, nor after the deletion, which would bring
 * a stopped replica back as live. A ConfigMap that goes hands over what it last held (a replica
 * writes its last counts as it stops), then the replica leaves: the hub still sums its last tallies.
 */
export function orderedHandOver(hub: Pick<ShadowHub, 'setPeer'>, log: Logger): ShadowHandOver {
  const queued = new Map<string, Promise<void>>();
  return (replica, data, gone) => {
    const next = (queued.get(replica) ?? Promise.resolve()).then(async () => {
      if (data !== undefined || !gone) await handOver(hub, log, replica, data);
      if (gone) hub.setPeer(replica, undefined);
    });
    queued.set(replica, next);
    void next.finally(() => {
      if (queued.get(replica) === next) queued.delete(replica);
    });
  };
}
