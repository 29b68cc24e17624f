// The prelude: the fixed helper functions a policy may use, emitted only when used, in this order.
// Every `not` a translated condition needs lives in one of them, over arguments already bound and
// type-checked.
import { block, type RegoVersion } from './regotext.ts';
import { IP_PATTERN } from './ip.ts';
import { TIMESTAMP_PATTERN } from './timestamps.ts';

export type PreludeName =
  | 'acl_ordered'
  | 'acl_size'
  | 'acl_in'
  | 'acl_not_in'
  | 'acl_starts_with'
  | 'acl_not_starts_with'
  | 'acl_ends_with'
  | 'acl_not_ends_with'
  | 'acl_contains'
  | 'acl_not_contains'
  | 'acl_ip'
  | 'acl_cidr_contains'
  | 'acl_cidr_excludes'
  | 'acl_timestamp_ns'
  | 'acl_hours'
  | 'acl_minutes'
  | 'acl_weekdays'
  | 'acl_weekday';

interface PreludeEntry {
  /** Head without the `if` keyword, e.g. `acl_in(x, c)` or `acl_size(x) = n`. */
  readonly heads: readonly { head: string; body: readonly string[] }[];
  readonly uses: readonly PreludeName[];
  readonly comment: string;
}

const PRELUDE: Record<PreludeName, PreludeEntry> = {
  acl_ordered: {
    comment: 'Ordering is defined between two numbers, two strings or two booleans only.',
    uses: [],
    heads: [
      { head: 'acl_ordered(a, b)', body: ['is_number(a)', 'is_number(b)'] },
      { head: 'acl_ordered(a, b)', body: ['is_string(a)', 'is_string(b)'] },
      { head: 'acl_ordered(a, b)', body: ['is_boolean(a)', 'is_boolean(b)'] },
    ],
  },
  acl_size: {
    comment: 'size(): code points of a string, elements of a list, entries of a map.',
    uses: [],
    heads: [
      { head: 'acl_size(x) = n', body: ['is_string(x)', 'n := count(x)'] },
      { head: 'acl_size(x) = n', body: ['is_array(x)', 'n := count(x)'] },
      { head: 'acl_size(x) = n', body: ['is_object(x)', 'n := count(x)'] },
    ],
  },
  acl_in: {
    comment: 'x in c: an element of a list, or a key of a map (tested as a key, so false and null values count).',
    uses: [],
    heads: [
      { head: 'acl_in(x, c)', body: ['is_array(c)', 'c[_] == x'] },
      { head: 'acl_in(x, c)', body: ['is_object(c)', 'is_string(x)', '_ = c[x]'] },
    ],
  },
  acl_not_in: {
    comment: 'x in c is false: c is a list without x, or a map and x a string that is not a key, a number or a boolean.',
    uses: ['acl_in'],
    heads: [
      { head: 'acl_not_in(x, c)', body: ['is_array(c)', 'not acl_in(x, c)'] },
      { head: 'acl_not_in(x, c)', body: ['is_object(c)', 'is_string(x)', 'not acl_in(x, c)'] },
      { head: 'acl_not_in(x, c)', body: ['is_object(c)', 'is_number(x)'] },
      { head: 'acl_not_in(x, c)', body: ['is_object(c)', 'is_boolean(x)'] },
    ],
  },
  acl_starts_with: {
    comment: 'startsWith is true (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_starts_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'startswith(s, p)'] }],
  },
  acl_not_starts_with: {
    comment: 'startsWith is false (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_not_starts_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'not startswith(s, p)'] }],
  },
  acl_ends_with: {
    comment: 'endsWith is true (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_ends_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'endswith(s, p)'] }],
  },
  acl_not_ends_with: {
    comment: 'endsWith is false (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_not_ends_with(s, p)', body: ['is_string(s)', 'is_string(p)', 'not endswith(s, p)'] }],
  },
  acl_contains: {
    comment: 'contains is true (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_contains(s, p)', body: ['is_string(s)', 'is_string(p)', 'contains(s, p)'] }],
  },
  acl_not_contains: {
    comment: 'contains is false (both must be strings).',
    uses: [],
    heads: [{ head: 'acl_not_contains(s, p)', body: ['is_string(s)', 'is_string(p)', 'not contains(s, p)'] }],
  },
  acl_ip: {
    comment: 'An IP address as Go parses one (IPv4 without leading zeros, IPv6 without zone; not a CIDR block).',
    uses: [],
    heads: [{ head: 'acl_ip(x)', body: ['is_string(x)', `regex.match(\`${IP_PATTERN}\`, x)`] }],
  },
  acl_cidr_contains: {
    comment: 'cidr(c).containsIP(x) is true.',
    uses: ['acl_ip'],
    heads: [{ head: 'acl_cidr_contains(c, x)', body: ['acl_ip(x)', 'net.cidr_contains(c, x)'] }],
  },
  acl_cidr_excludes: {
    comment: 'cidr(c).containsIP(x) is false (x must be an IP address).',
    uses: ['acl_ip'],
    heads: [{ head: 'acl_cidr_excludes(c, x)', body: ['acl_ip(x)', 'not net.cidr_contains(c, x)'] }],
  },
  acl_timestamp_ns: {
    comment: 'Timestamps: strict RFC 3339 (YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM)), years 1678 to 2261, read in UTC.',
    uses: [],
    heads: [
      {
        head: 'acl_timestamp_ns(s) = ns',
        body: ['is_string(s)', `regex.match(\`${TIMESTAMP_PATTERN}\`, s)`, 'ns := time.parse_rfc3339_ns(s)'],
      },
    ],
  },
  acl_hours: {
    comment: 'getHours() in UTC.',
    uses: ['acl_timestamp_ns'],
    heads: [{ head: 'acl_hours(s) = h', body: ['c := time.clock(acl_timestamp_ns(s))', 'h := c[0]'] }],
  },
  acl_minutes: {
    comment: 'getMinutes() in UTC.',
    uses: ['acl_timestamp_ns'],
    heads: [{ head: 'acl_minutes(s) = m', body: ['c := time.clock(acl_timestamp_ns(s))', 'm := c[1]'] }],
  },
  acl_weekdays: { comment: 'getDayOfWeek(): 0 is Sunday.', uses: [], heads: [] },
  acl_weekday: {
    comment: 'getDayOfWeek() in UTC.',
    uses: ['acl_timestamp_ns', 'acl_weekdays'],
    heads: [{ head: 'acl_weekday(s) = d', body: ['d := acl_weekdays[time.weekday(acl_timestamp_ns(s))]'] }],
  },
};
const PRELUDE_ORDER = Object.keys(PRELUDE) as PreludeName[];
const WEEKDAYS = '{"Sunday": 0, "Monday": 1, "Tuesday": 2, "Wednesday": 3, "Thursday": 4, "Friday": 5, "Saturday": 6}';

/** The prelude functions `used` (and those they use), in PRELUDE order, one text each. */
export function preludeText(used: ReadonlySet<PreludeName>, v: RegoVersion): string[] {
  const all = new Set<PreludeName>();
  const add = (n: PreludeName): void => {
    if (!all.has(n)) {
      all.add(n);
      PRELUDE[n].uses.forEach(add);
    }
  };
  used.forEach(add);
  const out: string[] = [];
  for (const name of PRELUDE_ORDER) {
    if (!all.has(name)) continue;
    const entry = PRELUDE[name];
    const parts: string[] = entry.comment ? [`# ${entry.comment}`] : [];
    if (name === 'acl_weekdays') parts.push(`acl_weekdays ${v === 1 ? ':=' : '='} ${WEEKDAYS}`);
    for (const { head, body } of entry.heads) parts.push(block(v, head, body));
    out.push(parts.join('\n'));
  }
  return out;
}
