import { describe, expect, it } from 'vitest';
import { timeOf } from '../../src/cli/replay.ts';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const refused = (value: string) => {
  const t = timeOf('--since', value, NOW);
  return 'ms' in t ? `accepted as ${t.text}` : t.message;
};

describe('--since and --until', () => {
  it('reads durations back from now and RFC 3339 times', () => {
    expect(timeOf('--since', '24h', NOW)).toEqual({ ms: NOW - 86_400_000, text: '2026-11-27T12:00:00.000Z' });
    expect(timeOf('--since', '2026-11-24T10:00:00+01:00', NOW)).toEqual({
      ms: Date.parse('2026-11-24T09:00:00Z'),
      text: '2026-11-24T09:00:00.000Z',
    });
    expect(timeOf('--until', '2024-02-29', NOW)).toEqual({ ms: Date.parse('2024-02-29T00:00:00Z'), text: '2024-02-29T00:00:00.000Z' });
  });

  it('refuses a duration reaching back past the earliest time a date can hold, instead of crashing', () => {
    expect(refused('999999999d')).toMatch(/^--since 999999999d: .*too far back/);
  });

  it('refuses a day the calendar does not have, instead of rolling it into the next month', () => {
    expect(refused('2026-02-30T00:00:00Z')).toMatch(/^--since 2026-02-30T00:00:00Z: use an RFC 3339 time/);
    expect(refused('2025-02-29')).toMatch(/^--since 2025-02-29: use an RFC 3339 time/);
    expect(refused('2026-04-31')).toMatch(/^--since 2026-04-31: use an RFC 3339 time/);
    expect(refused('2026-11-28T23:60:00Z')).toMatch(/^--since 2026-11-28T23:60:00Z: use an RFC 3339 time/);
  });
});
