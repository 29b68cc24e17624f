import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import type { UploadAnswer, UploadPart, UploadRequest } from './intake.ts';
import { createUploadThread } from './uploads-thread.ts';

const LIMIT = 4 * 1024 * 1024;
const stops: string[] = [];
const reader = createUploadThread({ maxUploadBytes: LIMIT, onStop: (reason) => stops.push(reason) });
afterAll(async () => {
  await reader.close();
});

function logs(text: string, parts: UploadPart[] = []): Promise<UploadAnswer> {
  const request: UploadRequest = {
    kind: 'logs',
    body: gzipSync(text),
    gzip: true,
    limitBytes: LIMIT,
    logs: {
      tenant: 'acme',
      connector: 'gateways',
      bundles: [['docs', 'gateways']],
      receivedMs: 0,
      clientIp: '',
      lines: true,
      recentPerBundle: 100,
    },
  };
  return reader.read(request, (part) => parts.push(part));
}

/** JSON text of about `bytes`, built from `item` repeated inside `open` and `close`. */
const filled = (open: string, item: (i: number) => string, close: string, bytes = LIMIT - 64, most = Infinity): string => {
  const items: string[] = [];
  for (let size = open.length + close.length, i = 0; size < bytes && i < most; i++) {
    const next = item(i);
    items.push(next);
    size += next.length + 1;
  }
  return `${open}${items.join(',')}${close}`;
};

describe('the uploads thread', () => {
  it('reads the costliest uploads its scan lets through (4 MiB each) without running out of memory', async () => {
    const event = (i: number): string =>
      JSON.stringify({
        labels: { id: 'opa-1' },
        decision_id: `d${i}`,
        bundles: { docs: { revision: '1' } },
        path: 'acl/allow',
        result: true,
      });
    const shapes: [string, string][] = [
      ['262,000 objects, each with a key of its own', filled('[', (i) => `{"${i.toString(36)}":0}`, ']', LIMIT, 262_000)],
      ['one object of 400,000 keys', filled('[{', (i) => `"k${i.toString(36)}":0`, '}]')],
      ['two million numbers', filled('[', () => '0', ']')],
      ['262,000 arrays of numbers', filled('[', () => '[0,0,0,0,0,0,0]', ']', LIMIT, 262_000)],
      ['23,000 decision events', filled('[', event, ']')],
    ];
    for (const [what, text] of shapes) {
      const answer = await logs(text);
      expect([what, answer.ok || answer.code]).toEqual([what, what.endsWith('events') ? true : 'bad_request']);
    }
    expect(stops).toEqual([]);
  });

  it('sends back what a decision-log upload records, every number exact, only the newest decisions of each bundle', async () => {
    const streamed: UploadPart[] = [];
    const events = Array.from(
      { length: 150 },
      (_, i) =>
        `{"labels":{"id":"opa-1"},"decision_id":"d${i}","bundles":{"docs":{"revision":"1"}},"path":"acl/allow","result":true,"input":{"n":9007199254740993}}`,
    );
    const answer = await logs(`[${events.join(',')}]`, streamed);
    expect(answer).toMatchObject({ ok: true, kind: 'logs', accepted: 150, counts: [{ bundle: 'docs', result: 'allow', n: 150 }] });
    // Small enough for one message: everything comes with the answer.
    expect(streamed).toEqual([]);
    const parts = answer.ok && answer.kind === 'logs' ? answer.parts : [];
    const lines = parts.flatMap((p) => ('lines' in p ? p.lines : []));
    const batches = parts.flatMap((p) => ('recent' in p ? p.recent : []));
    expect(lines).toHaveLength(150);
    expect(lines[0]).toContain('"input":{"n":9007199254740993}');
    expect(batches.map((b) => [b.bundle, b.asText])).toEqual([['docs', true]]);
    const recent = batches.flatMap((b) => b.decisions);
    expect(recent.map((d) => d.decisionId)).toEqual(events.slice(50).map((_, i) => `d${i + 50}`));
    expect(recent[0]?.input).toBe('{"n":9007199254740993}');
  });

  it('sends a large decision-log upload back in parts of at most 256 KiB, ahead of its answer', async () => {
    const streamed: UploadPart[] = [];
    const text = filled(
      '[',
      (i) =>
        JSON.stringify({
          labels: { id: 'opa-1' },
          decision_id: `d${i}`,
          bundles: { docs: { revision: '1' } },
          input: { pad: 'x'.repeat(300) },
          result: false,
        }),
      ']',
      1024 * 1024,
    );
    const answer = await logs(text, streamed);
    expect(answer).toMatchObject({ ok: true, kind: 'logs', parts: [] });
    expect(streamed.length).toBeGreaterThan(3);
    for (const part of streamed) if ('lines' in part) expect(part.lines.reduce((n, l) => n + l.length, 0)).toBeLessThan(256 * 1024 + 1024);
    const recent = streamed.flatMap((p) => ('recent' in p ? p.recent : []));
    expect(recent.every((b) => !b.asText)).toBe(true);
    expect(recent.flatMap((b) => b.decisions)).toHaveLength(100);
    expect(recent[0]?.decisions[0]?.input).toEqual({ pad: 'x'.repeat(300) });
  });

  it('answers 503 once closed, never starting another thread', async () => {
    const closed = createUploadThread({ maxUploadBytes: LIMIT });
    await closed.close();
    expect(await closed.read({ kind: 'status', body: Buffer.from('{}'), gzip: false, limitBytes: LIMIT })).toMatchObject({
      ok: false,
      code: 'unavailable',
    });
  });
});
