// docs/authzen.md promises that its curl examples work against `make run`: every example there is
// run here against the service loaded with examples/ (the folder `make run` serves), and its answer
// must match the `# →` line under it (`…` stands for any text).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const KEY = 'records-example-key-for-local-use-only';
const PUBLIC_URL = 'https://127.0.0.1:8443';

interface Example {
  readonly line: number;
  readonly path: string;
  readonly body: string | undefined;
  readonly keyed: boolean;
  readonly expected: string;
}

/** Every `curl … $PDP/<path>` of the page with its `# →` answer; continuation lines joined. */
function examples(markdown: string): Example[] {
  const lines = markdown.split('\n');
  const out: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*curl /.test(lines[i] as string)) continue;
    const start = i;
    let command = (lines[i] as string).trim();
    while (command.endsWith('\\')) command = `${command.slice(0, -1)} ${(lines[++i] as string).trim()}`;
    const answer = /^\s*# → (.*)$/.exec(lines[i + 1] ?? '');
    const path = /\$PDP(\S+)/.exec(command)?.[1];
    if (!answer || !path) throw new Error(`docs/authzen.md:${start + 1}: a curl example needs $PDP/<path> and a "# →" line under it`);
    out.push({
      line: start + 1,
      path,
      body: /-d '([^']*)'/.exec(command)?.[1],
      keyed: command.includes('"$KEY"'),
      expected: answer[1] as string,
    });
  }
  return out;
}

function matcher(expected: string): RegExp {
  return new RegExp(
    `^${expected
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
}

const docs = readFileSync(join(ROOT, 'docs', 'authzen.md'), 'utf8');
const cases = examples(docs);
let t: TestService;

beforeAll(async () => {
  const manifests: Record<string, string> = {};
  for (const f of readdirSync(join(ROOT, 'examples')))
    if (f.endsWith('.yaml')) manifests[f] = readFileSync(join(ROOT, 'examples', f), 'utf8');
  t = await startTestService({ manifests, publicUrl: PUBLIC_URL });
});
afterAll(async () => {
  await t.stop();
});

describe('docs/authzen.md', () => {
  it('has an example for every endpoint', () => {
    const paths = new Set(cases.map((c) => c.path.replace(/^\/records(?=\/access)/, '')));
    for (const p of [
      '/access/v1/evaluation',
      '/access/v1/evaluations',
      '/access/v1/search/subject',
      '/access/v1/search/resource',
      '/access/v1/search/action',
      '/.well-known/authzen-configuration',
      '/.well-known/authzen-configuration/records',
      '/authorization',
    ]) {
      expect(paths, p).toContain(p);
    }
  });

  it.each(cases.map((c) => [`line ${c.line}: ${c.path}`, c] as const))('%s answers as shown', async (_name, c) => {
    const res = await fetch(`${t.url}${c.path}`, {
      method: c.body === undefined ? 'GET' : 'POST',
      headers: {
        ...(c.keyed ? { Authorization: `Bearer ${KEY}` } : {}),
        ...(c.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(c.body === undefined ? {} : { body: c.body }),
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toMatch(matcher(c.expected));
  });
});
