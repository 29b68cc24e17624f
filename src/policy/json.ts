// JSON parsing for decision inputs. OPA keeps each JSON number's exact decimal text and compares
// numbers exactly; the evaluator compares IEEE doubles. The two agree on every number whose text is
// (numerically) the shortest decimal of its double: "0.1", "3", "1e21", "9007199254740992". They
// disagree on text that carries more precision than a double holds ("0.30000000000000001" is 0.3 to
// JavaScript but not to OPA; "9007199254740993" is ...992 to JavaScript), so such numbers are refused.

export type ParsedJson = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

/** A number token, or something that could hide one, worth a slow check: 16+ digits, or an exponent. */
const MAYBE_INEXACT = /[0-9][0-9.]{15,}|[0-9][eE][+-]?[0-9]/;

/** "-12.50e1" → "-125e0": sign, digits without leading or trailing zeros, and a power of ten. */
function decimalKey(text: string): string {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text);
  if (!m) return `?${text}`;
  const fraction = m[3] ?? '';
  let digits = `${m[2] as string}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  let exponent = BigInt(m[4] ?? '0') - BigInt(fraction.length);
  const kept = digits.replace(/0+$/, '');
  exponent += BigInt(digits.length - kept.length);
  digits = kept;
  return `${m[1] as string}${digits}e${exponent}`;
}

interface ReviverContext {
  readonly source?: string;
}

/**
 * Parses JSON text, refusing numbers that a double cannot hold as written (see above), with a
 * message that names the number. Syntax errors are reported with the parser's message.
 */
export function parseExactJson(text: string): ParsedJson {
  try {
    if (!MAYBE_INEXACT.test(text)) return { ok: true, value: JSON.parse(text) };
    let inexact: string | undefined;
    const value: unknown = JSON.parse(text, function check(this: unknown, _key: string, v: unknown, context?: ReviverContext) {
      if (inexact === undefined && typeof v === 'number' && context?.source !== undefined) {
        if (!Number.isFinite(v) || decimalKey(context.source) !== decimalKey(String(v))) inexact = context.source;
      }
      return v;
    } as (this: unknown, key: string, value: unknown) => unknown);
    if (inexact !== undefined) {
      return {
        ok: false,
        message: `the number ${inexact} cannot be compared exactly: decisions hold numbers as IEEE doubles (at most 15-17 significant digits, integers up to 2^53)`,
      };
    }
    return { ok: true, value };
  } catch (err) {
    return { ok: false, message: `invalid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}
