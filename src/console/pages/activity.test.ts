import { describe, expect, it } from 'vitest';
import type { SyncRecord } from '../../store/index.ts';
import { renderHtml } from '../html.ts';
import { bundleUrl } from '../paths.ts';
import { activitySection, filterActivity, parseActivityFilter } from './activity.ts';

const record = (over: Partial<SyncRecord>): SyncRecord => ({
  time: '2026-11-24T10:00:00.000Z',
  revision: 1,
  clientIp: '10.0.0.1',
  userAgent: 'OPA/1.1.0',
  status: 200,
  ...over,
});

const RECORDS: readonly SyncRecord[] = [
  record({ time: '2026-11-24T10:00:04.000Z', revision: 2, clientIp: '10.0.1.7', userAgent: 'OPA/1.1.0 (linux)', status: 200 }),
  record({ time: '2026-11-24T10:00:03.000Z', revision: 1, clientIp: '10.0.0.1', userAgent: 'opa/0.61.0', status: 304 }),
  record({ time: '2026-11-24T10:00:02.000Z', revision: 1, clientIp: '::ffff:192.168.1.5', userAgent: 'curl/8.5', status: 401 }),
  record({ time: '2026-11-24T10:00:01.000Z', revision: 1, clientIp: '10.0.0.1', userAgent: '', status: 429 }),
];

const parse = (query: string) => parseActivityFilter(new URLSearchParams(query));

describe('sync activity filters', () => {
  it('keep every record when the form is empty or asks for all statuses', () => {
    expect(filterActivity(RECORDS, parse('').filter)).toEqual(RECORDS);
    expect(filterActivity(RECORDS, parse('status=all&ip=&ua=&revision=').filter)).toEqual(RECORDS);
  });

  it('narrow by status, revision, client IP substring and user-agent text in any case, all at once', () => {
    expect(filterActivity(RECORDS, parse('status=304').filter).map((r) => r.status)).toEqual([304]);
    expect(filterActivity(RECORDS, parse('revision=2').filter).map((r) => r.revision)).toEqual([2]);
    expect(filterActivity(RECORDS, parse('ip=10.0.').filter)).toHaveLength(3);
    expect(filterActivity(RECORDS, parse('ip=192.168').filter).map((r) => r.userAgent)).toEqual(['curl/8.5']);
    expect(filterActivity(RECORDS, parse('ua=OPA').filter)).toHaveLength(2);
    expect(filterActivity(RECORDS, parse('ua=opa&revision=1&ip=10.0.0.1').filter).map((r) => r.status)).toEqual([304]);
  });

  it('name a status or revision that is not one, and leave that field out of the filter', () => {
    const p = parse('status=2OO&revision=-1');
    expect(p.problems).toEqual([
      'Status "2OO" is not an HTTP status: showing every status.',
      'Revision "-1" is not a whole number: showing every revision.',
    ]);
    expect(p.filter).toEqual({ status: undefined, clientIp: '', userAgent: '', revision: undefined });
    expect(p.typed.revision).toBe('-1');
  });
});

describe('sync activity section', () => {
  const render = (query: string, records = RECORDS) => renderHtml(activitySection(records, parse(query), bundleUrl('acme', 'docs')));

  it('says how many records the filter keeps of those held', () => {
    expect(render('')).toContain('4 of 4 records (the newest');
    expect(render('status=401')).toContain('1 of 4 records match the filter');
    expect(render('ua=nothing-like-it')).toContain('No record matches the filter.');
    expect(render('', [])).toContain('No OPA has requested this bundle yet.');
  });

  it('offers 200, 304, 401 and 403, and any other status the log holds, with the one asked for selected', () => {
    const out = render('status=429');
    expect(out.match(/<option value="[^"]*"/g)).toEqual([
      '<option value="all"',
      '<option value="200"',
      '<option value="304"',
      '<option value="401"',
      '<option value="403"',
      '<option value="429"',
    ]);
    expect(out).toContain('<option value="429" selected>429</option>');
  });

  it('keeps the filter form outside the live region, so a live refresh never takes what someone is typing', () => {
    const out = render('');
    expect(out.indexOf('</form>')).toBeLessThan(out.indexOf('id="bundle-activity" data-live'));
  });

  it('shows each date in UTC with its exact value in the markup, and an empty user agent as none', () => {
    const out = render('status=429');
    expect(out).toContain('<time datetime="2026-11-24T10:00:01.000Z">2026-11-24 10:00:01 UTC</time>');
    expect(out).toContain('<span class="muted">none</span>');
    expect(out).toContain('<span class="badge warn">429</span>');
  });
});
