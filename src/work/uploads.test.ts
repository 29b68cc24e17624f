import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import type { UploadAnswer, UploadPart, UploadRequest } from '../fleet/index.ts';
import { createUploadThread } from './uploads.ts';

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

  it('sends a decision-log upload back in parts, keeping every number exact and only the newest decisions per bundle', async () => {
    const parts: UploadPart[] = [];
    const events = Array.from(
      { length: 150 },
      (_, i) =>
        `{"labels":{"id":"opa-1"},"decision_id":"d${i}","bundles":{"docs":{"revision":"1"}},"path":"acl/allow","result":true,"input":{"n":9007199254740993}}`,
    );
    expect(await logs(`[${events.join(',')}]`, parts)).toEqual({
      ok: true,
      kind: 'logs',
      accepted: 150,
      counts: [{ bundle: 'docs', result: 'allow', n: 150 }],
    });
    const lines = parts.flatMap((p) => ('lines' in p ? p.lines : []));
    const recent = parts.flatMap((p) => ('recent' in p ? p.recent : []));
    expect(lines).toHaveLength(150);
    expect(lines[0]).toContain('"input":{"n":9007199254740993}');
    expect(recent.map((d) => d.decisionId)).toEqual(events.slice(50).map((_, i) => `d${i + 50}`));
    expect(recent[0]?.input).toBe('{"n":9007199254740993}');
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
