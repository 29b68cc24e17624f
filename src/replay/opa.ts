// replay --opa: the replayed decisions decided again by a real OPA on the candidate's bundles, the
// very archives `serve` would serve (written once to a temporary folder): an OPA line on its bundle, a
// service line on every bundle of its tenant that admits it. Inputs go to `opa eval` in batches of
// at most BATCH inputs and MAX_BATCH_CHARS of JSON per bundle, at most PARALLEL runs at once, so memory
// stays flat whatever the log's size, and whatever its inputs' (the service takes 1 MiB bodies).
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { opaAllows, type Opa } from '../opa/index.ts';
import { admits, type World, type WorldBundle } from '../policytest/index.ts';
import { changeOf } from './replay.ts';
import { countChange, exampleOf } from './report.ts';
import { EXAMPLES_PER_GROUP, type OpaReplay, type Replayed, type Verdict } from './types.ts';

/** Inputs per `opa eval` (one process reads them all at once). */
const BATCH = 1000;
/** JSON text per `opa eval` at most (an input longer than this goes alone): 1,000 inputs of 1 MiB would pass a string's limit. */
const MAX_BATCH_CHARS = 16 * 1024 * 1024;
/** Inputs (or their JSON text) waiting over all bundles before every bundle's batch is sent, however small. */
const MAX_WAITING = 4 * BATCH;
const MAX_WAITING_CHARS = 4 * MAX_BATCH_CHARS;
/** `opa eval` runs at once. */
const PARALLEL = 2;

export interface OpaReplayer {
  /** Queues a replayed decision for OPA (resolves once there is room for more). */
  add(r: Replayed): Promise<void>;
  /** Every queued decision decided, the temporary folder removed: OPA's counts, or why OPA failed. */
  finish(): Promise<OpaReplay | string>;
  /** The temporary folder removed at once (the command is interrupted: nothing waits for OPA). */
  abandon(): void;
}

interface Waiting {
  /** The order it was added in: examples are the first disagreements in log order, however runs finish. */
  readonly seq: number;
  readonly r: Replayed;
  /** The length of its input's JSON text. */
  readonly chars: number;
}

type DisagreementExample = OpaReplay['disagreementExamples'][number];

/** The bundles OPA decides a replayed decision on: its own bundle (OPA line), else every bundle of its tenant that admits it. */
function bundlesOf(r: Replayed, world: World): WorldBundle[] {
  const tenant = world.get(r.record.tenant);
  if (tenant === undefined) return [];
  if (r.record.source === 'opa') {
    const own = r.record.bundle === undefined ? undefined : tenant.bundles.get(r.record.bundle);
    return own === undefined ? [] : [own];
  }
  return [...tenant.bundles.values()].filter((b) => admits(b, r.record.input));
}

/** The candidate's bundle archives, written once each to a temporary folder made when the first is needed. */
function createArchives(parent: string): {
  archiveOf(bundle: WorldBundle): Promise<string>;
  /** The folder removed, once whatever was being written is. */
  remove(): Promise<void>;
  /** The folder removed now (the process is ending: nothing can wait). */
  abandon(): void;
} {
  let dir: Promise<string> | undefined;
  /** The folder once made, for abandon(), which cannot wait. */
  let made: string | undefined;
  const archives = new Map<WorldBundle, Promise<string>>();
  return {
    archiveOf(bundle) {
      let archive = archives.get(bundle);
      if (archive === undefined) {
        dir ??= mkdtemp(join(parent, 'acl-replay-opa-')).then((d) => {
          made = d;
          return d;
        });
        archive = dir.then(async (d) => {
          const path = join(d, `${encodeURIComponent(bundle.tenant)}.${encodeURIComponent(bundle.name)}.tar.gz`);
          await writeFile(path, bundle.bytes);
          return path;
        });
        archives.set(bundle, archive);
      }
      return archive;
    },
    async remove() {
      // A folder that could not be made has nothing to remove (and its failure is already told).
      const d = await dir?.catch(() => undefined);
      if (d !== undefined) await rm(d, { recursive: true, force: true });
    },
    abandon() {
      if (made !== undefined) rmSync(made, { recursive: true, force: true });
    },
  };
}

/** A replay of decisions in `opa`, on the bundles of `world` (archives written to a new folder under `parent`, removed by finish). */
export function createOpaReplay(opa: Opa, world: World, parent: string = tmpdir()): OpaReplayer {
  const counts = { replayed: 0, unchanged: 0, allowToDeny: 0, denyToAllow: 0 };
  let disagreements = 0;
  let examples: { seq: number; example: DisagreementExample }[] = [];
  let failed: string | undefined;
  let seq = 0;
  let waitingTotal = 0;
  let waitingChars = 0;
  const waiting = new Map<WorldBundle, { list: Waiting[]; chars: number }>();
  const running = new Set<Promise<void>>();
  const archives = createArchives(parent);
  const { archiveOf } = archives;

  const tally = (bundle: WorldBundle, batch: readonly Waiting[], allows: readonly boolean[]): void => {
    for (const [i, w] of batch.entries()) {
      const verdict: Verdict = allows[i] ? 'allow' : 'deny';
      countChange(counts, changeOf(w.r.record.decision, verdict));
      if (verdict === w.r.decision) continue;
      disagreements++;
      const example = { ...exampleOf(w.r.record), bundle: `${bundle.tenant}/${bundle.name}`, opa: verdict, native: w.r.decision };
      examples.push({ seq: w.seq, example });
      examples.sort((a, b) => a.seq - b.seq);
      examples = examples.slice(0, EXAMPLES_PER_GROUP);
    }
  };

  const run = async (bundle: WorldBundle, batch: readonly Waiting[]): Promise<void> => {
    try {
      const label = `${bundle.tenant}/${bundle.name}`;
      const allows = await opaAllows(
        opa,
        await archiveOf(bundle),
        batch.map((w) => w.r.record.input),
        label,
      );
      if (typeof allows === 'string') failed ??= allows;
      else tally(bundle, batch, allows);
    } catch (e) {
      failed ??= `OPA ${opa.version} could not be run: ${e instanceof Error ? e.message : String(e)}`;
    }
  };

  /** Sends a bundle's waiting batch to OPA, once fewer than PARALLEL runs are going. */
  const send = async (bundle: WorldBundle): Promise<void> => {
    const batch = waiting.get(bundle)?.list;
    if (batch === undefined || batch.length === 0) return;
    waiting.delete(bundle);
    waitingTotal -= batch.length;
    for (const w of batch) waitingChars -= w.chars;
    while (running.size >= PARALLEL) await Promise.race(running);
    const p = run(bundle, batch).finally(() => running.delete(p));
    running.add(p);
  };

  const sendAll = async (): Promise<void> => {
    for (const bundle of [...waiting.keys()]) await send(bundle);
  };

  return {
    add: async (r) => {
      if (failed !== undefined) return;
      const n = seq++;
      const bundles = bundlesOf(r, world);
      if (bundles.length === 0) return;
      const chars = JSON.stringify(r.record.input).length;
      for (const bundle of bundles) {
        // A batch that this input would take past its size goes first.
        if ((waiting.get(bundle)?.chars ?? 0) + chars > MAX_BATCH_CHARS) await send(bundle);
        const held = waiting.get(bundle) ?? { list: [], chars: 0 };
        held.list.push({ seq: n, r, chars });
        held.chars += chars;
        waiting.set(bundle, held);
        waitingTotal++;
        waitingChars += chars;
        if (held.list.length >= BATCH || held.chars >= MAX_BATCH_CHARS) await send(bundle);
      }
      if (waitingTotal >= MAX_WAITING || waitingChars >= MAX_WAITING_CHARS) await sendAll();
    },
    abandon: archives.abandon,
    finish: async () => {
      try {
        if (failed === undefined) await sendAll();
        while (running.size > 0) await Promise.race(running);
      } finally {
        await archives.remove();
      }
      if (failed !== undefined) return failed;
      return {
        version: opa.version,
        decided: counts.replayed,
        counts: { ...counts },
        disagreements,
        disagreementExamples: examples.map((e) => e.example),
      };
    },
  };
}
