// `acl-operator replay`: recorded decisions (the decision log, docs/service.md) decided again against
// what `serve` would serve for a candidate folder (the offline pipeline `test` and `render` use),
// natively and, with --opa, in a real OPA on its bundles; the report in the format asked. Exit 0 when
// the flips are within the gate, 1 when more flipped (or OPA disagreed with the native replay), 2 on
// bad usage, an unreadable --decisions path, manifests with problems or an OPA that does not run.
import { deliverReport } from './deliver.ts';
import { stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { commandDefaults } from '../config.ts';
import { openOpa } from '../opa/index.ts';
import { worldOf } from '../policytest/index.ts';
import { createOpaReplay, FORMATS, type Progress, type ReplayReport, replayLogs, sourcesOf, summaryLine } from '../replay/index.ts';
import { buildFolder } from './offline.ts';
import { renderOffline } from './render.ts';

type Format = keyof typeof FORMATS;
const isFormat = (f: string): f is Format => Object.hasOwn(FORMATS, f);

interface Options {
  readonly manifests: string;
  readonly decisions: readonly string[];
  readonly opa: string | undefined;
  readonly format: Format;
  readonly out: string | undefined;
  readonly maxFlips: number;
  readonly allowDirection: 'deny-to-allow' | undefined;
  /** The window: ms since the epoch, and as the report shows it (ISO 8601). */
  readonly since: { readonly ms: number; readonly text: string } | undefined;
  readonly until: { readonly ms: number; readonly text: string } | undefined;
}

class UsageError {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2}))?$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The RFC 3339 time's ms, or NaN; a day the calendar lacks (Feb 30) is NaN, where Date.parse rolls it into the next month. */
function rfc3339Ms(value: string): number {
  if (!RFC3339.test(value)) return Number.NaN;
  const day = value.slice(0, 10);
  const dayMs = Date.parse(day);
  if (Number.isNaN(dayMs) || new Date(dayMs).toISOString().slice(0, 10) !== day) return Number.NaN;
  return Date.parse(value);
}

/** --since/--until: an RFC 3339 time (or a date, midnight UTC), or a duration back from `now` (30m, 24h, 7d). */
export function timeOf(flag: string, value: string, now: number): { ms: number; text: string } | UsageError {
  const back = /^(\d{1,9})([smhd])$/.exec(value);
  const ms = back ? now - Number(back[1]) * UNIT_MS[back[2] as keyof typeof UNIT_MS] : rfc3339Ms(value);
  if (Number.isNaN(ms))
    return new UsageError(`${flag} ${value}: use an RFC 3339 time (2026-11-24T10:00:00Z) or a duration back from now (30m, 24h, 7d)`);
  // A date holds ±8.64e15 ms around 1970: 999999999d back is before that and has no ISO text.
  if (Number.isNaN(new Date(ms).getTime())) return new UsageError(`${flag} ${value}: too far back, before any time a date can hold`);
  return { ms, text: new Date(ms).toISOString() };
}

function optionsOf(argv: string[], env: NodeJS.ProcessEnv, now: number): Options | 'help' | UsageError {
  const { values } = parseArgs({
    args: argv,
    options: {
      manifests: { type: 'string' },
      decisions: { type: 'string', multiple: true },
      opa: { type: 'string' },
      format: { type: 'string', default: 'text' },
      out: { type: 'string' },
      'max-flips': { type: 'string', default: '0' },
      'allow-direction': { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const manifests = values.manifests ?? commandDefaults(env).manifests;
  if (!manifests) return new UsageError('replay needs --manifests <dir> (or ACL_MANIFESTS): the candidate folder');
  const decisions = values.decisions ?? [];
  if (decisions.length === 0) return new UsageError('replay needs --decisions <file|dir|-> (the decision log; may repeat)');
  if (decisions.includes('')) return new UsageError('--decisions needs a file, a folder or - (stdin)');
  if (decisions.filter((d) => d === '-').length > 1) return new UsageError('--decisions -: stdin can be read once');
  if (!isFormat(values.format)) return new UsageError(`--format ${values.format}: use text, json, junit or markdown`);
  if (values.opa === '') return new UsageError('--opa needs the path of an opa binary');
  if (values.out === '') return new UsageError('--out needs a file');
  const maxFlips = values['max-flips'];
  if (!/^\d{1,15}$/.test(maxFlips)) return new UsageError(`--max-flips ${maxFlips}: use a whole number, 0 or more`);
  const direction = values['allow-direction'];
  if (direction !== undefined && direction !== 'deny-to-allow') {
    return new UsageError(`--allow-direction ${direction}: the one direction that may be allowed is deny-to-allow`);
  }
  const since = values.since === undefined ? undefined : timeOf('--since', values.since, now);
  if (since instanceof UsageError) return since;
  const until = values.until === undefined ? undefined : timeOf('--until', values.until, now);
  if (until instanceof UsageError) return until;
  if (since !== undefined && until !== undefined && since.ms >= until.ms) {
    return new UsageError(`--since ${since.text} is not before --until ${until.text}: nothing would be replayed`);
  }
  const opa = values.opa ?? (env['OPA_BIN'] || undefined);
  return {
    manifests,
    decisions,
    opa,
    format: values.format,
    out: values.out,
    maxFlips: Number(maxFlips),
    allowDirection: direction,
    since,
    until,
  };
}

/** Why the --decisions paths cannot be read (missing, a folder without files), or undefined. */
async function decisionsProblem(paths: readonly string[]): Promise<string | undefined> {
  for (const p of paths) {
    if (p === '-') continue;
    try {
      if ((await stat(p)).isDirectory() && (await sourcesOf([p])).length === 0) return `--decisions ${p}: the folder holds no file to read`;
    } catch (err) {
      return `--decisions ${p}: cannot read it: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  return undefined;
}

/** Writes the report to --out (a line on stderr says where and how it went) or to stdout; 2 when --out fails. */
function deliver(report: ReplayReport, options: Options): Promise<number> {
  return deliverReport(FORMATS[options.format](report), options.out, () => summaryLine(report));
}

/** One line rewritten in place on a terminal: a person waiting on a million lines sees them go by. */
function terminalProgress(): ((p: Progress) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  const started = Date.now();
  return (p) => {
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(
      `\r\x1b[K${p.lines.toLocaleString('en-US')} lines read, ${p.replayed.toLocaleString('en-US')} replayed, ${p.flipped.toLocaleString('en-US')} flipped (${seconds.toFixed(1)} s)`,
    );
  };
}

/** `acl-operator replay`; `usage` is printed for --help. */
export async function replayCommand(argv: string[], usage: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<number> {
  const options = optionsOf(argv, process.env, Date.now());
  if (options === 'help') {
    process.stdout.write(usage);
    return 0;
  }
  const fail = (message: string): number => {
    process.stderr.write(`${message}\n`);
    return 2;
  };
  if (options instanceof UsageError) return fail(`${options.message}\n\n${usage}`);
  const unreadable = await decisionsProblem(options.decisions);
  if (unreadable !== undefined) return fail(unreadable);
  const opa = options.opa === undefined ? undefined : await openOpa(options.opa);
  if (typeof opa === 'string') return fail(opa);
  const offline = await buildFolder(options.manifests);
  if ('refused' in offline) return fail(offline.refused);
  const { problems } = renderOffline(offline);
  if (problems.length > 0) {
    return fail(
      `${problems.length} problem(s) in the manifests of ${options.manifests}; nothing was replayed:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
  const world = worldOf(offline);
  const progress = terminalProgress();
  const opaReplay = opa === undefined ? undefined : createOpaReplay(opa, world);
  // Interrupted (Ctrl-C, a CI job cancelled): OPA's temporary folder of bundle archives goes too.
  const interrupted = (signal: NodeJS.Signals): void => {
    opaReplay?.abandon();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  if (opaReplay !== undefined) process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  let report: ReplayReport | string;
  try {
    report = await replayLogs({
      paths: options.decisions,
      stdin,
      world,
      report: {
        manifests: options.manifests,
        since: options.since?.text,
        until: options.until?.text,
        maxFlips: options.maxFlips,
        allowDirection: options.allowDirection,
      },
      sinceMs: options.since?.ms,
      untilMs: options.until?.ms,
      opa: opaReplay,
      progress,
    });
  } catch (err) {
    report = `cannot read the decisions: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
    if (progress !== undefined) process.stderr.write('\r\x1b[K');
  }
  if (typeof report === 'string') return fail(report);
  const delivered = await deliver(report, options);
  if (delivered !== 0) return delivered;
  return report.gate.passed ? 0 : 1;
}
