// The CEL library's own evaluator, used as an oracle for our compiled closures. It gets the three
// corrections the conformance README lists (code point string order, `in` on map keys, well-formed
// input, which the caller provides), our two network helpers, which plain CEL does not have, and
// our timestamp profile: strict RFC 3339 within OPA's int64-nanosecond range, where CEL would also
// take 2023-02-29 (rolled over) or the year 1500 (docs/rules.md says why we follow OPA there).
import { CelScalar, celEnv, celFunc, celMethod, isCelError, isCelMap, mapType, objectType, parse, plan } from '@bufbuild/cel';
import { TimestampSchema, timestampFromMs } from '@bufbuild/protobuf/wkt';
import { cidrContains, parseCidr, parseIp } from '../../src/policy/ip.ts';
import { parseTimestamp } from '../../src/policy/timestamps.ts';
import { codePointCompare } from '../../src/policy/values.ts';

const S = CelScalar.STRING;
const B = CelScalar.BOOL;

const env = celEnv({
  funcs: [
    celFunc('_<_', [S, S], B, (a, b) => codePointCompare(a, b) < 0),
    celFunc('_<=_', [S, S], B, (a, b) => codePointCompare(a, b) <= 0),
    celFunc('_>_', [S, S], B, (a, b) => codePointCompare(a, b) > 0),
    celFunc('_>=_', [S, S], B, (a, b) => codePointCompare(a, b) >= 0),
    celFunc('@in', [S, mapType(S, CelScalar.DYN)], B, (key, map) => {
      if (!isCelMap(map)) throw new Error('not a map');
      for (const k of map.keys()) if (k === key) return true;
      return false;
    }),
    celFunc('cidr', [S], S, (block) => {
      if (!parseCidr(block)) throw new Error(`invalid CIDR ${block}`);
      return block;
    }),
    celFunc('ip', [S], S, (address) => address),
    celFunc('timestamp', [S], objectType(TimestampSchema), (text) => {
      const ms = parseTimestamp(text);
      if (ms === undefined) throw new Error(`invalid timestamp ${text}`);
      return timestampFromMs(ms);
    }),
    celMethod('containsIP', S, [CelScalar.DYN], B, function containsIP(this: string, address) {
      const block = parseCidr(this);
      const ip = typeof address === 'string' ? parseIp(address) : undefined;
      if (!block || !ip) throw new Error('containsIP needs an IP address string');
      return cidrContains(block, ip);
    }),
  ],
});

export type OracleTruth = 'true' | 'false' | 'error';

/** Plans a condition once; the returned function evaluates it on a well-formed decision input. */
export function celOracle(condition: string): (input: Record<string, unknown>) => OracleTruth {
  const run = plan(env, parse(condition));
  return (input) => {
    let result: unknown;
    try {
      result = run(input as never);
    } catch {
      return 'error';
    }
    if (isCelError(result)) return 'error';
    return result === true ? 'true' : result === false ? 'false' : 'error';
  };
}
