// One decision-log line (docs/service.md, "The decision log") checked into what replay decides again:
// parsed with the API's exact-number JSON parse, its fields checked as our log writes them, and its
// input checked exactly as POST /authorization checks a request (authzen's loggedInputOf). Whatever
// fails says why, under one cause of types.ts: a line is never dropped without a count.
import { loggedInputOf } from '../authzen/index.ts';
import { parseExactJson } from '../policy/index.ts';
import type { Cause, LineResult, Unreplayable, Verdict } from './types.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function unreplayable(cause: Cause, where: string, detail: string): Unreplayable {
  return { ok: false, cause, where, detail };
}

/** A string field, or undefined when absent or of another type. */
function str(o: Record<string, unknown>, key: string): string | undefined {
  const v = o[key];
  return typeof v === 'string' ? v : undefined;
}

/** The rule named by a service allow's policyId `<tenant>/<rule>` (a deny's policyId is the tenant: no rule). */
function ruleOf(policyId: string | undefined, tenant: string): string | undefined {
  if (policyId === undefined || !policyId.startsWith(`${tenant}/`)) return undefined;
  const rule = policyId.slice(tenant.length + 1);
  return rule.length > 0 ? rule : undefined;
}

/**
 * What one line of a decision log is: a Recorded decision to replay, or why not (not-json,
 * not-ours, not-a-decision, refused-input; unknown-bundle for an OPA decision made without one of
 * our bundles). `where` is `<source>:<line>`. The tenant and bundle are checked against the
 * candidate later (replay.ts).
 */
export function recordOf(text: string, where: string): LineResult {
  const parsed = parseExactJson(text);
  if (!parsed.ok) {
    // The parse says "invalid JSON: ..." for text that is not JSON; else a number the API refuses (400).
    if (parsed.message.startsWith('invalid JSON')) return unreplayable('not-json', where, 'not a JSON value (a truncated or garbled line)');
    return unreplayable('refused-input', where, parsed.message);
  }
  const line = parsed.value;
  if (!isObject(line) || line['stream'] !== 'decisions')
    return unreplayable('not-ours', where, 'not a decision-log line (no "stream":"decisions")');
  const tenant = str(line, 'tenant');
  const source = line['source'];
  const time = str(line, 'time');
  const decision = str(line, 'decision');
  if (tenant === undefined || tenant === '') return unreplayable('not-ours', where, 'no "tenant" string');
  if (source !== 'service' && source !== 'opa') return unreplayable('not-ours', where, '"source" is neither "service" nor "opa"');
  const timeMs = time === undefined ? Number.NaN : Date.parse(time);
  if (time === undefined || Number.isNaN(timeMs)) return unreplayable('not-ours', where, 'no "time" that reads as a date');
  if (decision === undefined) return unreplayable('not-ours', where, 'no "decision" string');
  if (decision !== 'allow' && decision !== 'deny')
    return unreplayable('not-a-decision', where, `the decision was "${decision.slice(0, 40)}", not allow or deny`);
  const bundle = line['bundle'];
  if (source === 'opa' && typeof bundle !== 'string') {
    return unreplayable('unknown-bundle', where, 'OPA decided without one of our bundles active (bundle null)');
  }
  const logged = line['input'];
  const input = loggedInputOf(logged);
  if (!input.ok) return unreplayable('refused-input', where, `the API would refuse this input: ${input.message}`);
  const verdict: Verdict = decision;
  const endpoint = source === 'service' ? str(line, 'endpoint') : undefined;
  const rule = source === 'service' && verdict === 'allow' ? ruleOf(str(line, 'policyId'), tenant) : undefined;
  return {
    ok: true,
    record: {
      where,
      time,
      timeMs,
      tenant,
      source,
      ...(endpoint === undefined ? {} : { endpoint }),
      ...(source === 'opa' && typeof bundle === 'string' ? { bundle } : {}),
      decision: verdict,
      ...(rule === undefined ? {} : { rule }),
      input: input.input,
      logged,
    },
  };
}

/** Whether a record falls in the window: at or after `since`, before `until` (ms since the epoch; either may be open). */
export function inWindow(r: { readonly timeMs: number }, since?: number, until?: number): boolean {
  return (since === undefined || r.timeMs >= since) && (until === undefined || r.timeMs < until);
}
