import { stripVTControlCharacters } from 'node:util';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger, logFormatOf, prettyLine } from './log.ts';

/** A destination that keeps each write as it came. */
function capture(): { writes: string[]; write(line: string): void } {
  const writes: string[] = [];
  return {
    writes,
    write(line) {
      writes.push(line);
    },
  };
}

/** What a person sees of `text`, colours aside (vitest may force them on). */
const seen = (text: string): string => stripVTControlCharacters(text);

const CLOCK = String.raw`\d\d:\d\d:\d\d\.\d{3}`;

describe('--log-format', () => {
  it.each([
    ['auto', true, 'pretty'],
    ['auto', false, 'json'],
    ['json', true, 'json'],
    ['json', false, 'json'],
    ['pretty', true, 'pretty'],
    ['pretty', false, 'pretty'],
  ] as const)('%s with a terminal %s writes %s', (asked, isTTY, format) => {
    expect(logFormatOf(asked, isTTY)).toBe(format);
  });
});

describe('the JSON log', () => {
  it('is pino writing straight to the destination: nothing formats a line on its way', () => {
    const dest = capture();
    const log = createLogger('info', dest, 'json');
    expect(Reflect.get(log, pino.symbols.streamSym)).toBe(dest);
    log.info({ key: 'Bundle/acme/docs', revision: 2 }, 'Built bundle');
    expect(dest.writes).toHaveLength(1);
    expect(JSON.parse(dest.writes[0] as string)).toEqual({
      level: 30,
      time: expect.any(String),
      service: 'acl-operator',
      key: 'Bundle/acme/docs',
      revision: 2,
      msg: 'Built bundle',
    });
  });
});

describe('the pretty log', () => {
  it('writes one line per event: time, level, message, then the fields', () => {
    const dest = capture();
    const log = createLogger('info', dest, 'pretty');
    log.info({ url: 'https://127.0.0.1:8443', tenants: ['acme', 'records'], problems: 0 }, 'Serving');
    log.child({ module: 'standalone' }).warn({ files: ['a b.yaml'], settleMs: 300 }, 'Waiting for manifest files to hold still');
    expect(dest.writes.map(seen)).toEqual([
      expect.stringMatching(
        new RegExp(`^${CLOCK} INFO  Serving  url=https://127\\.0\\.0\\.1:8443 tenants=\\["acme","records"\\] problems=0\\n$`),
      ),
      expect.stringMatching(
        new RegExp(`^${CLOCK} WARN  Waiting for manifest files to hold still  module=standalone files=\\["a b\\.yaml"\\] settleMs=300\\n$`),
      ),
    ]);
  });

  it('keeps the level: debug lines stay out at info', () => {
    const dest = capture();
    const log = createLogger('info', dest, 'pretty');
    log.debug({ status: 200 }, 'Served bundle request');
    log.error('Failed to stop cleanly');
    expect(dest.writes.map(seen)).toEqual([expect.stringMatching(new RegExp(`^${CLOCK} ERROR Failed to stop cleanly\\n$`))]);
  });

  it('redacts Authorization headers and tokens as the JSON log does', () => {
    const dest = capture();
    const log = createLogger('info', dest, 'pretty');
    log.info(
      { headers: { authorization: 'Bearer agent_secret1' }, token: 'agent_secret2', secret: { token: 'agent_secret3' } },
      'Received',
    );
    const line = seen(dest.writes.join(''));
    expect(line).not.toMatch(/agent_secret/);
    expect(line).toContain('headers={"authorization":"[redacted]"} token=[redacted] secret={"token":"[redacted]"}');
  });

  it('quotes values that hold spaces or separators, and escapes what a terminal would act on', () => {
    const dest = capture();
    const log = createLogger('info', dest, 'pretty');
    log.info(
      { path: '/a b', eq: 'x=y', esc: '\u001b[2J\u009b31m', bidi: 'abc\u202edef', empty: '', n: null, ok: true },
      'Line\nbreak\u001b[31m',
    );
    const line = dest.writes[0] as string;
    for (const raw of ['\u001b[2J', '\u001b[31m', '\u009b', '\u202e', '\nbreak']) expect(line).not.toContain(raw);
    expect(seen(line)).toContain(
      'Line\\u000abreak\\u001b[31m  path="/a b" eq="x=y" esc="\\u001b[2J\\u009b31m" bidi="abc\\u202edef" empty="" n=null ok=true',
    );
    expect(line.split('\n')).toHaveLength(2);
  });

  it("shows an error's message and own properties on its line, and its stack below", () => {
    const dest = capture();
    const log = createLogger('info', dest, 'pretty');
    const err = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:9090'), { code: 'EADDRINUSE' });
    log.fatal({ err }, 'Failed to start');
    const [first, second, ...rest] = seen(dest.writes[0] as string).split('\n');
    expect(first).toMatch(
      new RegExp(
        `^${CLOCK} FATAL Failed to start  err="listen EADDRINUSE: address already in use 127\\.0\\.0\\.1:9090" err\\.code=EADDRINUSE$`,
      ),
    );
    expect(second).toBe('    Error: listen EADDRINUSE: address already in use 127.0.0.1:9090');
    expect(rest[0]).toMatch(/^ {4}at /);
    expect(dest.writes).toHaveLength(1);
  });

  it('passes a line that is not a JSON object on as it came', () => {
    expect(prettyLine('not json\n')).toBe('not json\n');
    expect(prettyLine('[1,2]\n')).toBe('[1,2]\n');
  });
});
