// Typed calls between the benchmark and its child processes over Node's IPC channel. Each child is
// started under `taskset -c <core>` so a server and the load generator never share a core.
import { spawn, type ChildProcess } from 'node:child_process';

/** What a child answers: command name → argument and result types. */
export type Commands = Record<string, { readonly arg: unknown; readonly result: unknown }>;
export type Handlers<M extends Commands> = { readonly [K in keyof M]: (arg: M[K]['arg']) => M[K]['result'] | Promise<M[K]['result']> };

interface Call {
  readonly id: number;
  readonly cmd: string;
  readonly arg: unknown;
}
type Reply =
  | { readonly id: number; readonly ok: true; readonly result: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };
type Message = { readonly ready: unknown } | Reply | { readonly stop: true };

function send(message: Message | Call, child?: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null): void => (err ? reject(err) : resolve());
    if (child) child.send(message, done);
    else if (process.send) process.send(message, done);
    else reject(new Error('this script is started by bench/http.ts, with an IPC channel'));
  });
}

/**
 * Child side: answers commands and reports `ready` once. On `stop`, SIGINT, SIGTERM, or its parent
 * going away, it runs `onStop` (which removes its temporary folders) and exits, so an interrupted
 * benchmark leaves nothing behind.
 */
export function serveCommands<M extends Commands>(
  handlers: Handlers<M>,
  ready: unknown,
  onStop: () => Promise<void> = async () => {},
): void {
  let stopping: Promise<void> | undefined;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = onStop().finally(() => process.exit(0));
  };
  process.on('message', (raw: Call | { stop: true }) => {
    if ('stop' in raw) {
      shutdown();
      return;
    }
    const handler = handlers[raw.cmd] as ((arg: unknown) => unknown) | undefined;
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`unknown command ${raw.cmd}`);
        return handler(raw.arg);
      })
      .then(
        (result) => send({ id: raw.id, ok: true, result }),
        (err: unknown) => send({ id: raw.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      )
      .catch(shutdown);
  });
  process.on('disconnect', shutdown);
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  void send({ ready });
}

export interface Pinned<M extends Commands, R> {
  readonly pid: number;
  /** What the child reported when it was ready (a port, a token...). */
  readonly ready: R;
  call<K extends keyof M & string>(cmd: K, arg: M[K]['arg']): Promise<M[K]['result']>;
  /** Asks the child to stop cleanly (it removes its temporary folders) and waits for it to exit. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let parentHandlers = false;

/**
 * Children still running when the benchmark ends (a failure, Ctrl-C) are resumed, since a variant's
 * run pauses the others with SIGSTOP, and asked to stop, so they clean up after themselves.
 */
export function track(child: ChildProcess): void {
  if (!parentHandlers) {
    // Installed by the first child started, so they exist only in the benchmark's own process.
    parentHandlers = true;
    process.on('exit', () => {
      for (const c of live) {
        c.kill('SIGCONT');
        c.kill('SIGTERM');
      }
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  }
  live.add(child);
  child.once('exit', () => live.delete(child));
}

/**
 * Starts `node <nodeFlags> <script> <args>` on one core (in `cwd`, by default ours) and waits for its
 * ready message. A child that sends anything else first speaks another protocol: it is refused.
 */
export function spawnPinned<M extends Commands, R>(
  core: number,
  script: string,
  args: readonly string[] = [],
  nodeFlags: readonly string[] = [],
  cwd?: string,
): Promise<Pinned<M, R>> {
  const child = spawn('taskset', ['-c', String(core), process.execPath, ...nodeFlags, script, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(cwd === undefined ? {} : { cwd }),
  });
  track(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => {
      const err = new Error(`${script} exited (${signal ?? code})`);
      reject(err);
      for (const p of pending.values()) p.reject(err);
    });
    let ready = false;
    child.on('message', (raw: Message) => {
      // A child from another checkout (BENCH_BASELINE) may speak an older or newer protocol.
      if (typeof raw !== 'object' || raw === null || (!ready && !('ready' in raw))) {
        if (!ready) reject(new Error(`${script} sent ${JSON.stringify(raw)?.slice(0, 200)} before its ready message`));
        return;
      }
      if ('ready' in raw) {
        ready = true;
        resolve({
          pid: child.pid as number,
          ready: raw.ready as R,
          call: (cmd, arg) =>
            new Promise((res, rej) => {
              const id = nextId++;
              pending.set(id, { resolve: res as (v: unknown) => void, reject: rej });
              send({ id, cmd, arg }, child).catch(rej);
            }),
          async stop() {
            if (child.exitCode === null && child.signalCode === null) await send({ stop: true }, child).catch(() => child.kill());
            await exited;
          },
        });
        return;
      }
      if (!('id' in raw)) return;
      const p = pending.get(raw.id);
      pending.delete(raw.id);
      if (raw.ok) p?.resolve(raw.result);
      else p?.reject(new Error(typeof raw.error === 'string' ? raw.error : `${script} answered ${JSON.stringify(raw).slice(0, 200)}`));
    });
  });
}
