// `acl-operator [serve]`: reads the configuration, starts the service (standalone on a folder, or
// the Kubernetes operator) and runs it until SIGTERM or SIGINT. Loaded only for this command: the
// offline commands (render, lint, test) never load the Kubernetes client or the HTTP stack.
import { closeSync, openSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { readConfig, SERVE_USAGE, type Config } from '../config.ts';
import { MAX_BACKLOG_BYTES, type Destination } from '../fleet/index.ts';
import { createLogger, logFormatOf } from '../log.ts';
import { startOperator, startService, type Operator, type Service } from '../modes/index.ts';
import { KeyProblem } from '../signing/index.ts';
import { folderProblem } from './folder.ts';
import { describeService } from './banner.ts';

/**
 * The log's stream. With --decision-log stdout, decision lines and log lines share one asynchronous
 * stdout stream, so a line of one never lands inside a line of the other; it is flushed at exit.
 */
function logStream(config: Config): Destination | undefined {
  if (config.decisionLog.kind !== 'stdout') return undefined;
  // Bounded like a decision log file: a stdout nobody reads drops lines (counted) rather than grow.
  const stream = pino.destination({ dest: 1, sync: false, maxLength: MAX_BACKLOG_BYTES });
  process.once('exit', () => {
    try {
      stream.flushSync();
    } catch {
      /* already closed */
    }
  });
  return stream;
}

/** serve's root logger: --log-level, and --log-format (auto: pretty when stdout is a terminal) on `stdout` when shared. */
function serveLogger(config: Config, stdout: Destination | undefined): Logger {
  return createLogger(config.logLevel, stdout, logFormatOf(config.logFormat, process.stdout.isTTY === true));
}

/** A decision log file must open before anything starts: a typo is a usage error, not a silent loss. */
function checkDecisionLog(config: Config): string | undefined {
  if (config.decisionLog.kind !== 'file') return undefined;
  const file = config.decisionLog.path;
  try {
    closeSync(openSync(file, 'a', 0o600));
    return undefined;
  } catch (err) {
    return `--decision-log ${file}: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * SIGHUP reopens the decision log file (after logrotate moved it). At exit, the lines still batched
 * (up to 20 ms of them) are written, also on an exit that skipped stop().
 */
function reopenOnHangup(service: { fleet: { sink: { reopen(): void; flushSync(): void } } }, log: Logger): void {
  process.on('SIGHUP', () => {
    service.fleet.sink.reopen();
    log.info('Reopened the decision log');
  });
  process.once('exit', () => {
    service.fleet.sink.flushSync();
  });
}

export async function serveCommand(argv: string[]): Promise<number> {
  const read = readConfig(argv, process.env);
  if (read.ok === 'help') {
    process.stdout.write(SERVE_USAGE);
    return 0;
  }
  if (!read.ok) {
    process.stderr.write(`${read.message}\n\n${SERVE_USAGE}`);
    return 2;
  }
  const config = read.config;
  const badLog = checkDecisionLog(config);
  if (badLog !== undefined) {
    process.stderr.write(`${badLog}\n`);
    return 2;
  }
  if (config.manifests === undefined) return serveKubernetes(config);
  const notFolder = await folderProblem(config.manifests);
  if (notFolder !== undefined) {
    process.stderr.write(`--manifests ${config.manifests}: ${notFolder}\n`);
    return 2;
  }
  const stdout = logStream(config);
  const log = serveLogger(config, stdout);
  let service: Service;
  try {
    service = await startService(config, { log, ...(stdout ? { stdout } : {}) });
  } catch (err) {
    log.fatal({ err }, 'Failed to start');
    process.stderr.write(`acl-operator: ${err instanceof Error ? err.message : String(err)}\n`);
    // No signing key that signs (signing/current.pem broken): the person's to fix, like a bad flag.
    return err instanceof KeyProblem ? 2 : 1;
  }
  reopenOnHangup(service, log);
  process.stderr.write(`${await describeService(service, config)}\n`);
  await untilSignal(service, log);
  return 0;
}

/** Resolves once SIGTERM or SIGINT stopped the service. */
function untilSignal(service: { stop(): Promise<void> }, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      log.info({ signal }, 'Stopping');
      service.stop().then(resolve, (err: unknown) => {
        log.error({ err }, 'Failed to stop cleanly');
        resolve();
      });
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
}

async function serveKubernetes(config: Config): Promise<number> {
  const stdout = logStream(config);
  const log = serveLogger(config, stdout);
  let operator: Operator;
  try {
    operator = await startOperator(config, { log, ...(stdout ? { stdout } : {}) });
  } catch (err) {
    log.fatal({ err }, 'Failed to start the Kubernetes operator');
    process.stderr.write(`acl-operator: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  reopenOnHangup(operator, log);
  await untilSignal(operator, log);
  // Stopped: the Lease is released and the last statuses written. Aborted watches can leave sockets
  // that would hold the process for another 30 s; nothing is left to do.
  process.exit(0);
}
