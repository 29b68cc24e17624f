// One replay from start to end: the logs read line by line (read.ts), each line checked (record.ts),
// kept to the window, decided again (replay.ts), given to OPA when asked (opa.ts) and counted
// (report.ts). Every line read lands in exactly one count: replayed, outside the window, or a cause.
import type { World } from '../policytest/index.ts';
import type { OpaReplayer } from './opa.ts';
import { type LineRead, readBatches } from './read.ts';
import { inWindow, recordOf } from './record.ts';
import { createReplayer } from './replay.ts';
import { createReportBuilder, type ReportOptions } from './report.ts';
import { MAX_LINE_BYTES, type Replayed, type ReplayReport } from './types.ts';

/** How far a replay got: shown to a person who waits (stderr on a terminal). */
export interface Progress {
  readonly lines: number;
  readonly replayed: number;
  readonly flipped: number;
}

export interface ReplayRun {
  /** Files, folders or `-`, as --decisions gave them. */
  readonly paths: readonly string[];
  readonly stdin: NodeJS.ReadableStream;
  readonly world: World;
  /** The report's header and gate (its `sources` are filled while reading). */
  readonly report: Omit<ReportOptions, 'sources'>;
  /** The window in ms since the epoch (either end open). */
  readonly sinceMs?: number | undefined;
  readonly untilMs?: number | undefined;
  readonly opa?: OpaReplayer | undefined;
  /** Called every PROGRESS_EVERY lines and once at the end. */
  readonly progress?: ((p: Progress) => void) | undefined;
  /** Longest line parsed (default MAX_LINE_BYTES). */
  readonly maxLineBytes?: number;
}

const PROGRESS_EVERY = 50_000;

/**
 * Replays decision logs against a world: the report, or why OPA failed (a string). A path that
 * cannot be read throws (the command's exit 2).
 */
export async function replayLogs(run: ReplayRun): Promise<ReplayReport | string> {
  const sources: string[] = [];
  const report = createReportBuilder({ ...run.report, sources });
  const replay = createReplayer(run.world);
  const max = run.maxLineBytes ?? MAX_LINE_BYTES;
  let lines = 0;
  let replayed = 0;
  let flipped = 0;
  try {
    await readAll();
  } catch (err) {
    // OPA's temporary folder goes too before the failure is told.
    await run.opa?.finish();
    throw err;
  }
  run.progress?.({ lines, replayed, flipped });
  if (run.opa !== undefined) {
    const opa = await run.opa.finish();
    if (typeof opa === 'string') return opa;
    report.opa(opa);
  }
  return report.build();

  /** One line into its count; the decision replayed, for OPA. */
  function count(l: LineRead): Replayed | undefined {
    report.line();
    if (++lines % PROGRESS_EVERY === 0) run.progress?.({ lines, replayed, flipped });
    if ('tooLong' in l) {
      report.unreplayable({ ok: false, cause: 'too-long', where: l.where, detail: `a line longer than ${max} bytes` });
      return undefined;
    }
    if ('broken' in l) {
      report.unreplayable({ ok: false, cause: 'not-json', where: l.where, detail: l.broken });
      return undefined;
    }
    const line = recordOf(l.text, l.where);
    if (!line.ok) {
      report.unreplayable(line);
      return undefined;
    }
    if (!inWindow(line.record, run.sinceMs, run.untilMs)) {
      report.outside();
      return undefined;
    }
    const decided = replay(line.record);
    if ('cause' in decided) {
      report.unreplayable(decided);
      return undefined;
    }
    replayed++;
    if (decided.change !== 'unchanged') flipped++;
    report.replayed(decided);
    return decided;
  }

  async function readAll(): Promise<void> {
    for await (const batch of readBatches(run.paths, run.stdin, { opened: (s) => sources.push(s), maxLineBytes: max })) {
      for (const l of batch) {
        const decided = count(l);
        if (decided !== undefined && run.opa !== undefined) await run.opa.add(decided);
      }
    }
  }
}
