// The decision log: one JSON line per decision, from OPA's uploads and from the service's own
// POST /authorization and AuthZEN evaluations, in one shape, to stdout or a file (--decision-log).
// Lines are collected for up to 20 ms, then appended to SonicBoom's buffer (pino.destination,
// asynchronous) in one piece and written in the background: a decision never waits for the disk.
// Past MAX_BACKLOG_BYTES of unwritten lines, new lines are dropped and counted rather than holding
// memory without bound.
import { pino } from 'pino';

export type SinkTarget = { readonly kind: 'off' } | { readonly kind: 'stdout' } | { readonly kind: 'file'; readonly path: string };

/** Unwritten lines kept at most (bytes) before new ones are dropped. */
export const MAX_BACKLOG_BYTES = 16 * 1024 * 1024;
/** Lines are written at most this long after they were made... */
const BATCH_MS = 20;
/** ...or as soon as this many are waiting. */
const MAX_BATCH_LINES = 1024;
/** close() waits this long at most for the file to be written and closed. */
const CLOSE_TIMEOUT_MS = 5_000;

/** The stream SonicBoom gives (pino.destination): what the sink writes to. */
export type Destination = ReturnType<typeof pino.destination>;

export interface DecisionSink {
  /** False for --decision-log off: callers skip building lines. */
  readonly enabled: boolean;
  /** Appends one line (a JSON object, without the newline). Never blocks. */
  write(line: string): void;
  /** Opens the file again (after logrotate moved it: SIGHUP). */
  reopen(): void;
  /** Writes what is buffered now (at exit). */
  flushSync(): void;
  /** Writes what is buffered, then closes (a shared stdout stream is only flushed). */
  close(): Promise<void>;
}

const OFF: DecisionSink = {
  enabled: false,
  write: () => undefined,
  reopen: () => undefined,
  flushSync: () => undefined,
  close: async () => undefined,
};

export interface SinkOptions {
  /** Lines dropped because the backlog was full. */
  readonly onDrop?: (lines: number) => void;
  /** Write to this stream instead of opening one (stdout shared with the log, so lines never interleave). */
  readonly stream?: Destination;
  /** The file or stdout refused a write (disk full, closed pipe): lines are lost until it recovers. */
  readonly onError?: (err: Error) => void;
}

/** Opens the decision log. A file is created with mode 0600 (decisions carry what requests carried) in a folder that exists. */
export function createDecisionSink(target: SinkTarget, options: SinkOptions = {}): DecisionSink {
  if (target.kind === 'off') return OFF;
  const shared = options.stream !== undefined;
  const dest =
    options.stream ??
    pino.destination(
      target.kind === 'stdout'
        ? { dest: 1, sync: false, maxLength: MAX_BACKLOG_BYTES }
        : // No mkdir: the folder must exist (Node's recursive mkdir never returns on some paths, e.g. under /proc).
          // Buffers, not strings: SonicBoom encodes a string twice (to write it, then again to account for
          // what was written), two large allocations a flush that cost a decision about 1 µs in page faults.
          { dest: target.path, sync: false, append: true, mode: 0o600, maxLength: MAX_BACKLOG_BYTES, contentMode: 'buffer' },
    );
  const ownFile = !shared && target.kind === 'file';
  // An unhandled 'error' would end the process: a decision log must never take the decisions down.
  dest.on('error', (err: Error) => options.onError?.(err));
  dest.on('drop', (data: unknown) => {
    const text = typeof data === 'string' || Buffer.isBuffer(data) ? data : String(data);
    let lines = 0;
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
    options.onDrop?.(Math.max(1, lines));
  });
  // Lines go to SonicBoom in batches, every BATCH_MS or MAX_BATCH_LINES lines: a write per line cost
  // a decision about 2.5 µs (SonicBoom measures and appends its buffer on every call), and a write per
  // turn of the event loop still about 20 µs at 13,000 decisions/s (a file write for a few lines).
  let batch: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  /** After close(): a late decision (an upload still being applied) is counted as dropped, never written to a destroyed stream. */
  let closed = false;
  const flush = (): void => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (batch.length === 0) return;
    const lines = batch;
    batch = [];
    lines.push('');
    const text = lines.join('\n');
    try {
      // contentMode 'buffer' (SonicBoom's types know only strings).
      if (ownFile) dest.write(Buffer.from(text) as unknown as string);
      else dest.write(text);
    } catch (err) {
      // The stream is gone (destroyed after an error): the lines are lost, and said to be.
      options.onDrop?.(lines.length - 1);
      options.onError?.(err instanceof Error ? err : new Error(String(err)));
    }
  };
  return {
    enabled: true,
    write(line) {
      if (closed) {
        options.onDrop?.(1);
        return;
      }
      batch.push(line);
      if (batch.length >= MAX_BATCH_LINES) flush();
      else if (timer === undefined) {
        timer = setTimeout(flush, BATCH_MS);
        timer.unref();
      }
    },
    reopen() {
      if (closed) return;
      flush();
      if (target.kind === 'file' && !shared) dest.reopen();
    },
    flushSync() {
      flush();
      try {
        dest.flushSync();
      } catch {
        /* not open yet, or already closed */
      }
    },
    async close() {
      if (closed) return;
      flush();
      closed = true;
      if (shared) {
        await new Promise<void>((resolve) => dest.flush(() => resolve()));
        return;
      }
      // Settles on close, or on an error (a full disk, a file that never opened), or after
      // CLOSE_TIMEOUT_MS: a stuck decision log never holds the shutdown.
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(giveUp);
          resolve();
        };
        const giveUp = setTimeout(() => {
          dest.destroy();
          resolve();
        }, CLOSE_TIMEOUT_MS);
        giveUp.unref();
        dest.once('close', done);
        dest.once('error', done);
        dest.end();
      });
    },
  };
}
