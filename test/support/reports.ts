// OPA uploads for tests and benchmarks, built from what real OPAs send (test/fixtures/opa): a status
// report of OPA 1.1 (its 45 KB of Prometheus metrics included) and decision-log events.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'opa');
export const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Record<string, unknown>;
const FULL_REPORT = fixture('status-1.1-ok.json');

export interface BundleState {
  revision?: string;
  code?: string;
  message?: string;
  httpCode?: number;
  stopping?: boolean;
}

/** OPA 1.1's status report for agent `id` running `bundles` (name → state). */
export function statusReport(id: string, bundles: Record<string, BundleState>): Record<string, unknown> {
  return {
    ...FULL_REPORT,
    labels: { id, version: '1.1.0' },
    bundles: Object.fromEntries(
      Object.entries(bundles).map(([name, b]) => [
        name,
        {
          name,
          ...(b.revision === undefined ? {} : { active_revision: b.revision }),
          last_successful_activation: '2026-11-24T10:00:00.000000000Z',
          last_successful_download: '2026-11-24T10:00:00.000000000Z',
          last_request: '2026-11-24T10:00:01.000000000Z',
          ...(b.code === undefined && !b.stopping
            ? {}
            : {
                code: b.code ?? 'bundle_error',
                message: b.stopping ? `request failed: Get "https://x/bundles/${name}": context canceled` : (b.message ?? 'failed'),
              }),
          ...(b.httpCode === undefined ? {} : { http_code: b.httpCode }),
        },
      ]),
    ),
  };
}

/** One decision-log event as OPA 1.1 writes it, for bundle `bundle` at `revision`. */
export function decisionEvent(i: number, over: Record<string, unknown> = {}, bundle = 'docs', revision = '1'): Record<string, unknown> {
  return {
    labels: { id: 'opa-1', version: '1.1.0' },
    decision_id: `decision-${i}`,
    bundles: { [bundle]: { revision } },
    path: 'acl/allow',
    input: {
      principal: { type: 'user', id: `u${i}`, team: 'blue' },
      action: 'read',
      resource: { type: 'document', id: 'd1', team: 'blue' },
    },
    result: i % 2 === 0,
    requested_by: '127.0.0.1:5000',
    timestamp: `2026-11-24T10:00:${String(i % 60).padStart(2, '0')}.123456789Z`,
    req_id: i,
    metrics: {
      counter_server_query_cache_hit: 0,
      timer_rego_input_parse_ns: 41531,
      timer_rego_query_eval_ns: 28082,
      timer_server_handler_ns: 283392,
    },
    ...over,
  };
}
