// IP addresses, with the rules of Go's net.ParseIP (which OPA's net.cidr_contains uses): dotted
// decimal IPv4 without leading zeros; IPv6 in RFC 4291 text form, with an optional IPv4 tail and
// no zone. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address.
import type { Cidr } from './model.ts';

export interface IpAddress {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

function parseIpv4Bytes(s: string): Uint8Array | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i] as string;
    if (!/^[0-9]{1,3}$/.test(p) || (p.length > 1 && p[0] === '0')) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseIpv6Bytes(s: string): Uint8Array | undefined {
  const out = new Uint8Array(16);
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (text: string): number[] | undefined => {
    if (text === '') return [];
    const res: number[] = [];
    const fields = text.split(':');
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i] as string;
      if (i === fields.length - 1 && f.includes('.')) {
        const v4 = parseIpv4Bytes(f);
        if (!v4) return undefined;
        res.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
        continue;
      }
      if (!/^[0-9A-Fa-f]{1,4}$/.test(f)) return undefined;
      res.push(parseInt(f, 16));
    }
    return res;
  };
  const head = groups(halves[0] as string);
  const tail = halves.length === 2 ? groups(halves[1] as string) : [];
  if (!head || !tail) return undefined;
  // An IPv4 tail is only allowed at the very end of the address.
  if (halves.length === 2 && (halves[0] as string).includes('.')) return undefined;
  const count = head.length + tail.length;
  if (halves.length === 1 ? count !== 8 : count > 7) return undefined;
  const all = [...head, ...new Array<number>(8 - count).fill(0), ...tail];
  all.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

const HEX = '[0-9A-Fa-f]{1,4}';
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])';
const IPV4 = `${OCTET}(\\.${OCTET}){3}`;

/** An IPv6 address in RFC 4291 text: 8 groups, or fewer around one `::` standing for at least one. */
function ipv6Pattern(): string {
  const groups = (n: number): string => (n === 0 ? '' : n === 1 ? HEX : `(${HEX}:){${n - 1}}${HEX}`);
  const upTo = (n: number): string => (n === 0 ? '' : `((${HEX}:){0,${n - 1}}${HEX})?`);
  const alternatives = [`(${HEX}:){7}${HEX}`, `(${HEX}:){6}${IPV4}`];
  for (let head = 0; head <= 7; head++) alternatives.push(`${groups(head)}::${upTo(7 - head)}`);
  for (let head = 0; head <= 5; head++) alternatives.push(`${groups(head)}::(${HEX}:){0,${5 - head}}${IPV4}`);
  return alternatives.map((a) => `(${a})`).join('|');
}

/**
 * What Go's net.ParseIP accepts, as one regular expression valid in both JavaScript and Go's RE2:
 * rego.ts guards net.cidr_contains with it, so OPA never sees a string it cannot parse (which would
 * be a builtin error), and parseIp below checks it first, so both sides accept the same strings.
 */
export const IP_PATTERN = `^((${IPV4})|${ipv6Pattern()})$`;
const IP_RE = new RegExp(IP_PATTERN);

/** Parses an IP address as Go's net.ParseIP does; undefined when it is not one. */
export function parseIp(s: string): IpAddress | undefined {
  if (!IP_RE.test(s)) return undefined;
  if (s.includes(':')) {
    const b = parseIpv6Bytes(s);
    if (!b) return undefined;
    return isV4Mapped(b) ? { family: 4, bytes: b.slice(12) } : { family: 6, bytes: b };
  }
  const b = parseIpv4Bytes(s);
  return b ? { family: 4, bytes: b } : undefined;
}

/** Parses a CIDR block ("10.0.0.0/8", "2001:db8::/32") into canonical form; undefined when invalid. */
export function parseCidr(s: string): Cidr | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const addrText = s.slice(0, slash);
  const prefixText = s.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined;
  // A mapped address written in IPv6 form stays an IPv6 network here (Go keeps 16 bytes for it).
  const family: 4 | 6 = addrText.includes(':') ? 6 : 4;
  const raw = family === 6 ? parseIpv6Bytes(addrText) : parseIpv4Bytes(addrText);
  const prefix = Number(prefixText);
  if (!raw || prefix > raw.length * 8) return undefined;
  if (family === 6 && isV4Mapped(raw)) return undefined; // ambiguous in Go; rejected so both sides agree
  const bytes = raw.map((byte, i) => {
    const bits = Math.max(0, Math.min(8, prefix - i * 8));
    return byte & ((0xff << (8 - bits)) & 0xff);
  });
  return { text: `${formatIp(family, bytes)}/${prefix}`, family, bytes, prefix };
}

function formatIp(family: 4 | 6, b: Uint8Array): string {
  if (family === 4) return Array.from(b).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((b[i] as number) << 8) | (b[i + 1] as number)).toString(16));
  return groups.join(':');
}

/** Whether a CIDR block contains an address; addresses of the other family are never contained. */
export function cidrContains(c: Cidr, ip: IpAddress): boolean {
  if (c.family !== ip.family) return false;
  for (let bit = 0; bit < c.prefix; bit += 8) {
    const i = bit / 8;
    const bits = Math.min(8, c.prefix - bit);
    const mask = (0xff << (8 - bits)) & 0xff;
    if (((ip.bytes[i] as number) & mask) !== c.bytes[i]) return false;
  }
  return true;
}
