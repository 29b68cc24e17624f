import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_CHARS, parseStatusReport } from './report.ts';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'opa', name), 'utf8'));

describe('parseStatusReport', () => {
  it.each(['1.1', '0.61'])('reads who OPA %s is and the revision it runs', (version) => {
    const r = parseStatusReport(fixture(`status-${version}-ok.json`));
    expect(r.ok && r.value).toMatchObject({
      version: `${version}.0`,
      bundles: [{ name: 'docs', activeRevision: '7', error: undefined, httpCode: undefined, stopping: false }],
    });
    expect(r.ok && r.value.agentId).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.ok && r.value.bundles[0]?.lastActivation).toMatch(/^2026-/);
  });

  it.each(['1.1', '0.61'])('reads a failed download of OPA %s: the revision it still runs, the code and the HTTP status', (version) => {
    const r = parseStatusReport(fixture(`status-${version}-401.json`));
    expect(r.ok && r.value.bundles[0]).toMatchObject({
      activeRevision: '7',
      error: { code: 'bundle_error', message: 'server replied with Unauthorized' },
      httpCode: 401,
      stopping: false,
    });
  });

  it("takes OPA's zero time for never, and no active revision for an OPA that never activated", () => {
    const r = parseStatusReport(fixture('status-0.61-never-activated.json'));
    expect(r.ok && r.value.bundles[0]).toMatchObject({
      activeRevision: undefined,
      lastActivation: undefined,
      lastDownload: undefined,
      httpCode: 401,
    });
  });

  it('accepts the first report of a starting OPA, which names no bundle yet', () => {
    const r = parseStatusReport(fixture('status-1.1-starting.json'));
    expect(r.ok && r.value.bundles).toEqual([]);
  });

  it.each(['1.1', '0.61'])('recognises the last report of a stopping OPA %s', (version) => {
    const r = parseStatusReport(fixture(`status-${version}-stopping.json`));
    expect(r.ok && r.value.bundles[0]?.stopping).toBe(true);
  });

  it("adds OPA's first detailed error to the message, and bounds it", () => {
    const r = parseStatusReport({
      labels: { id: 'a' },
      bundles: {
        b: {
          code: 'bundle_error',
          message: 'error(s) occurred while compiling module(s)',
          errors: [{ code: 'rego_parse_error', message: '`if` keyword is required before rule body' }],
        },
      },
    });
    expect(r.ok && r.value.bundles[0]?.error?.message).toBe(
      'error(s) occurred while compiling module(s): `if` keyword is required before rule body',
    );
    const long = parseStatusReport({ labels: { id: 'a' }, bundles: { b: { code: 'x', message: 'm'.repeat(10_000) } } });
    expect(long.ok && long.value.bundles[0]?.error?.message.length).toBe(MAX_MESSAGE_CHARS);
  });

  it.each([
    [null, 'not an OPA status report: Invalid input: expected object, received null'],
    [[], 'expected object, received array'],
    [{}, 'labels'],
    [{ labels: {} }, 'labels.id'],
    [{ labels: { id: '' } }, 'labels.id'],
    [{ labels: { id: 'has space' } }, 'labels.id'],
    [{ labels: { id: 7 } }, 'labels.id'],
    [{ labels: { id: 'a' }, bundles: [] }, 'bundles'],
    [{ labels: { id: 'a' }, bundles: { b: { active_revision: 5 } } }, 'bundles.b.active_revision'],
    [{ labels: { id: 'a' }, bundles: { b: { http_code: 'x' } } }, 'bundles.b.http_code'],
  ])('refuses %j, naming the field', (body, message) => {
    const r = parseStatusReport(body);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toContain(message);
  });
});
