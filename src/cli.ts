#!/usr/bin/env node
// Command line entry point: `serve` (the default) runs the service, `status` reads a standalone
// state folder, `render` prints what `serve` would serve for a folder of manifests (the offline pipeline),
// `lint` what is legal in it but almost certainly wrong.
import { closeSync, openSync } from 'node:fs';
import { access, mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { lint } from './cli/lint.ts';
import { formatRender, type RenderResult, renderOffline } from './cli/render.ts';
import { describeService } from './cli/serve.ts';
import { formatStatus } from './cli/status.ts';
import { testCommand } from './cli/test.ts';
import { pino, type Logger } from 'pino';
import { commandDefaults, readConfig, SERVE_USAGE, type Config } from './config.ts';
import { MAX_BACKLOG_BYTES, type Destination } from './fleet/index.ts';
import { createLogger } from './log.ts';
import { buildOffline, startOperator, startService, type Operator, type Service } from './service/index.ts';
import { openStateFolder } from './standalone/index.ts';

const USAGE = `Usage: acl-operator [command] [options]

Commands:
  serve    (default) Run the service: decisions, OPA bundles, metrics; see acl-operator serve --help
  status   Print the state folder of standalone mode as tables, like kubectl get
  render   Print the bundles (listing, .manifest and policy.rego) built from a folder of manifests
  lint     Print what is legal but almost certainly wrong in a folder of manifests (docs/testing.md)
  test     Decide the cases of test files (*.test.yaml) against a folder of manifests, natively and in OPA

Options of render:
  --manifests <dir>   Folder of YAML manifests (Rule, Connector, Bundle); read recursively
                      (default: $ACL_MANIFESTS)
  --out <dir>         Also write each bundle to <dir>/<tenant>/<bundle>.tar.gz, e.g. for opa eval -b
  --no-rego           Print the listing only, not the file contents

Options of lint:
  --manifests <dir>   Folder of YAML manifests, read recursively (default: $ACL_MANIFESTS)
  --strict            Exit with status 1 when there are findings (for CI)
  --format <f>        text (default: one line per finding and a count) or json

Options of test (docs/testing.md):
  --manifests <dir>   Folder of YAML manifests, built as serve would (default: $ACL_MANIFESTS); its
                      *.test.yaml / *.test.yml files are the test files unless --tests is given
  --tests <path>      A test file, or a folder searched recursively for test files
  --opa <binary>      Also decide every case with this OPA on the bundles its tenant serves
                      (default: $OPA_BIN)
  --format <format>   text (default), junit, tap or json
  --out <file>        Write the report to <file> instead of stdout

Options of status:
  --state-dir <dir>   The state folder of a standalone service (default: $ACL_STATE_DIR or .acl-state)
  --rule <ns/name>    One rule: phase, conditions and its Rego translation
  --bundle <ns/name>  One bundle: revision, digest and its sync activity

  -h, --help          Show this help

Exit status of render: 0 when every manifest was used, 1 when some were reported as problems, 2 on bad usage.
Exit status of lint: 0 (1 with --strict when there are findings), 2 on bad usage or manifests reported as problems.
Exit status of test: 0 when every case passed, 1 on a failed case or a disagreement with OPA, 2 on bad
usage, manifests with problems, test files with errors (or none found), or an OPA that does not run.
`;

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

async function serve(argv: string[]): Promise<number> {
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
  const log = createLogger(config.logLevel, stdout);
  let service: Service;
  try {
    service = await startService(config, { log, ...(stdout ? { stdout } : {}) });
  } catch (err) {
    log.fatal({ err }, 'Failed to start');
    return 1;
  }
  reopenOnHangup(service, log);
  process.stderr.write(`${await describeService(service, config)}\n`);
  await untilSignal(service, log);
  return 0;
}

/** Why `dir` cannot be read as a folder ("not a folder", ENOENT, ...), or undefined when it can. */
async function folderProblem(dir: string): Promise<string | undefined> {
  try {
    return (await stat(dir)).isDirectory() ? undefined : 'not a folder';
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Writes each bundle to <out>/<tenant>/<bundle>.tar.gz; the first failure is said in one line. */
async function writeArchives(out: string, bundles: RenderResult['bundles']): Promise<string | undefined> {
  for (const b of bundles) {
    const target = join(out, b.tenant, `${b.name}.tar.gz`);
    try {
      await mkdir(join(out, b.tenant), { recursive: true });
      await writeFile(target, b.built.bytes);
    } catch (err) {
      return `--out ${out}: cannot write ${target}: ${err instanceof Error ? err.message : String(err)}`;
    }
    process.stderr.write(`Wrote ${target}\n`);
  }
  return undefined;
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
  const log = createLogger(config.logLevel, stdout);
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

async function status(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'state-dir': { type: 'string' },
      rule: { type: 'string' },
      bundle: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const dir = values['state-dir'] ?? commandDefaults(process.env).stateDir;
  try {
    await access(join(dir, 'objects'));
  } catch {
    process.stderr.write(
      `${dir} is not the state folder of a standalone service (no objects/ in it); start one with acl-operator --manifests <dir> --state-dir ${dir}\n`,
    );
    return 2;
  }
  const state = openStateFolder(dir);
  await state.load();
  process.stdout.write(
    await formatStatus(state, { ...(values.rule ? { rule: values.rule } : {}), ...(values.bundle ? { bundle: values.bundle } : {}) }),
  );
  return 0;
}

async function render(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      manifests: { type: 'string' },
      out: { type: 'string' },
      'no-rego': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const dir = values.manifests ?? commandDefaults(process.env).manifests;
  if (!dir) {
    process.stderr.write(`render needs --manifests <dir> (or ACL_MANIFESTS)\n\n${USAGE}`);
    return 2;
  }
  const notFolder = await folderProblem(dir);
  if (notFolder !== undefined) {
    process.stderr.write(`cannot read manifests from ${dir}: ${notFolder}\n`);
    return 2;
  }
  const built = await buildOffline(dir);
  if ('unreadable' in built) {
    process.stderr.write(`cannot read manifests from ${dir}: ${built.unreadable}\n`);
    return 2;
  }
  if (built.files.length === 0) {
    process.stderr.write(`no .yaml or .yml files in ${dir}\n`);
    return 1;
  }
  process.stderr.write(`Read ${built.files.length} file(s) from ${dir}\n`);
  const result = renderOffline(built);
  process.stdout.write(formatRender(result, { rego: !values['no-rego'] }));
  const unwritten = values.out ? await writeArchives(values.out, result.bundles) : undefined;
  if (unwritten !== undefined) {
    process.stderr.write(`${unwritten}\n`);
    return 2;
  }
  return result.problems.length > 0 ? 1 : 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'render':
        return await render(rest);
      case 'lint':
        return await lint(rest, USAGE);
      case 'status':
        return await status(rest);
      case 'test':
        return await testCommand(rest, USAGE);
      case 'serve':
        return await serve(rest);
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(USAGE);
        return 0;
      default:
        if (command === undefined || command.startsWith('-')) return await serve(argv);
        process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    // parseArgs reports unknown or malformed options by throwing.
    if (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
