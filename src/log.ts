// The root logger. Tokens never reach a log line: Authorization headers and token fields are redacted.
// Lines are JSON, or on a terminal lines a person reads (prettyLine): the same records, redacted the
// same way, formatted after pino has serialised them, so JSON lines cost what they always did.
import { styleText } from 'node:util';
import { pino, type Logger, type LevelWithSilent } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'secret.token',
  'data.token',
];

/** How log lines look: JSON lines for machines, or one line per event for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';

/** --log-format: `auto` is pretty on a terminal and JSON anywhere else (a pipe, a file, a Pod's log), as kubectl-era tools do. */
export function logFormatOf(asked: 'auto' | LogFormat, isTTY: boolean): LogFormat {
  return asked === 'auto' ? (isTTY ? 'pretty' : 'json') : asked;
}

/**
 * The root logger at `level`, writing to `destination` (stdout when not given), with token paths
 * redacted. `pretty` hands each serialised line through prettyLine on its way to the same
 * destination, one write per line, so lines still never land inside another writer's lines.
 */
export function createLogger(level: LevelWithSilent, destination?: pino.DestinationStream, format: LogFormat = 'json'): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'acl-operator' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (format === 'json') return pino(options, destination);
  // pino's own default destination: stdout, written synchronously.
  const out = destination ?? pino.destination({ dest: 1, sync: true });
  return pino(options, {
    write(line: string) {
      out.write(prettyLine(line));
    },
  });
}

const LEVELS: Readonly<Record<number, readonly [string, Parameters<typeof styleText>[0]]>> = {
  10: ['TRACE', 'gray'],
  20: ['DEBUG', 'gray'],
  30: ['INFO', 'green'],
  40: ['WARN', 'yellow'],
  50: ['ERROR', 'red'],
  60: ['FATAL', 'red'],
};
/** Fields every line has, shown in the line's head or not at all (`service` is the base field). */
const HEAD = new Set(['level', 'time', 'msg', 'service', 'err']);
/** A value written without quotes: nothing a reader could take for a separator. */
const BARE = /^[\w.:/@+,%~^#*[\]-]+$/;
/** What a terminal would act on rather than show: controls, line and paragraph separators, bidi overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it finds.
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every character a terminal would act on written as a \u escape (field values carry what requests carried). */
function visible(text: string): string {
  return text.replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A field value as logfmt writes it: bare when that is unambiguous, else JSON. */
function valueText(value: unknown): string {
  if (typeof value === 'string') return BARE.test(value) ? value : visible(JSON.stringify(value));
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return visible(JSON.stringify(value) ?? String(value));
}

/** HH:MM:SS.mmm in local time, as a clock on the wall reads. */
function clock(iso: unknown): string {
  const d = new Date(typeof iso === 'string' || typeof iso === 'number' ? iso : Number.NaN);
  if (Number.isNaN(d.getTime())) return '--:--:--.---';
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** The `err` field (pino's err serialiser: type, message, stack, the error's own properties): inline fields, and its stack. */
function errorParts(err: unknown): { fields: [string, unknown][]; stack: string[] } {
  if (typeof err !== 'object' || err === null) return { fields: err === undefined ? [] : [['err', err]], stack: [] };
  const { type: _type, message, stack, ...own } = err as Record<string, unknown>;
  return {
    fields: [['err', String(message ?? '')], ...Object.entries(own).map(([k, v]): [string, unknown] => [`err.${k}`, v])],
    stack: typeof stack === 'string' ? stack.split('\n').map((l) => `    ${visible(l.trim())}`) : [],
  };
}

/**
 * One serialised pino line as a person reads it: `12:04:05.123 INFO  Built bundle  key=Bundle/acme/docs revision=2`,
 * an error's stack on the lines below. Colours only where the terminal takes them (util.styleText: a
 * TTY, NO_COLOR and FORCE_COLOR). A line that is not a JSON object is passed on as it came.
 */
export function prettyLine(line: string): string {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return line;
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return line;
  const r = record as Record<string, unknown>;
  const [label, colour] = LEVELS[Number(r['level'])] ?? [String(r['level']), 'white'];
  const err = errorParts(r['err']);
  const fields = [...Object.entries(r).filter(([k]) => !HEAD.has(k)), ...err.fields].map(
    ([k, v]) => `${styleText('dim', `${visible(k)}=`)}${valueText(v)}`,
  );
  const head = `${styleText('dim', clock(r['time']))} ${styleText(colour, label.padEnd(5))} ${visible(String(r['msg'] ?? ''))}`;
  const lines = [fields.length > 0 ? `${head}  ${fields.join(' ')}` : head, ...err.stack.map((l) => styleText('dim', l))];
  return `${lines.join('\n')}\n`;
}
