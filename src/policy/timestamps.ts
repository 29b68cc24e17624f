// Timestamps: the strict RFC 3339 profile YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM), upper-case T and
// Z, a day that exists, and a year from 1678 to 2261: every such instant fits OPA's int64 nanoseconds
// (1677-09-21 to 2262-04-11), so time.parse_rfc3339_ns never raises an error on what the pattern lets
// through. rego.ts guards it with the same pattern.

const YEAR = '(16(7[89]|[89][0-9])|1[7-9][0-9]{2}|2[01][0-9]{2}|22[0-5][0-9]|226[01])';
// Leap years from 1678 to 2261: divisible by 4, except 1700, 1800, 1900, 2100 and 2200.
const LEAP_YEAR = '(16(8[048]|9[26])|(1[7-9]|2[01])(0[48]|[2468][048]|[13579][26])|2000|22(0[48]|[135][26]|[24][048]|60))';
const MONTH_DAY = '((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))';

/** The timestamp pattern, written once for both JavaScript and Go's RE2 (rego.ts embeds it). */
export const TIMESTAMP_PATTERN = `^(${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`;
const TIMESTAMP_RE = new RegExp(TIMESTAMP_PATTERN);

/** Milliseconds since the epoch (UTC, whole seconds) of a timestamp in the strict profile; undefined when invalid. */
export function parseTimestamp(s: string): number | undefined {
  if (!TIMESTAMP_RE.test(s)) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(Number(s.slice(0, 4)), Number(s.slice(5, 7)) - 1, Number(s.slice(8, 10)));
  date.setUTCHours(Number(s.slice(11, 13)), Number(s.slice(14, 16)), Number(s.slice(17, 19)), 0);
  // A fraction of a second cannot move the hour, minute or weekday, so it is skipped.
  const rest = s.slice(19).replace(/^\.[0-9]+/, '');
  let offsetMs = 0;
  if (rest !== 'Z') {
    const sign = rest[0] === '-' ? -1 : 1;
    offsetMs = sign * (Number(rest.slice(1, 3)) * 60 + Number(rest.slice(4, 6))) * 60_000;
  }
  return date.getTime() - offsetMs;
}
