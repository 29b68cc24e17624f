// What the simulated OPA fleet sends, built once as HTTP/1.1 request bytes: per agent, OPA 1.1's
// status report (about 47 KB, most of it OPA's own Prometheus metrics) under its own labels.id, and
// one decision-log upload (a gzip JSON array of decision events on the tenant's own requests).
// Seeded, so every run sends the same bytes.
import { gzipSync } from 'node:zlib';
import { decisionEvent, statusReport } from '../../test/support/reports.ts';
import { rng } from '../generate.ts';
import { BUNDLE, CONNECTOR, decisionBodies, opaInput, TENANT, tenantRules } from '../http/tenant.ts';

export const STATUS_PATH = `/${TENANT}/connectors/policyagent/${CONNECTOR}/status`;
export const LOGS_PATH = `/${TENANT}/connectors/policyagent/${CONNECTOR}/logs`;

/** The headers Go's HTTP client and OPA's REST client put on every upload. */
const OPA_HEADERS = [
  'Host: 127.0.0.1',
  'User-Agent: Open Policy Agent/1.1.0 (linux, amd64)',
  'Accept-Encoding: gzip',
  'Content-Type: application/json',
];

/** A version 4 UUID from a seeded source: what OPA puts in labels.id and decision_id. */
function uuid(r: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(r() * 16).toString(16));
  hex[12] = '4';
  hex[16] = (8 + Math.floor(r() * 4)).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

function request(path: string, token: string, body: Buffer, gzip: boolean): Buffer {
  const head = [
    `POST ${path} HTTP/1.1`,
    ...OPA_HEADERS,
    ...(gzip ? ['Content-Encoding: gzip'] : []),
    `Authorization: Bearer ${token}`,
    `Content-Length: ${body.length}`,
  ];
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

export interface AgentRequests {
  readonly id: string;
  /** POST .../status with the agent's report. */
  readonly status: Buffer;
  /** POST .../logs with the agent's batch of decisions. */
  readonly logs: Buffer;
}

export interface FleetRequests {
  readonly agents: readonly AgentRequests[];
  /** Body sizes: the report (JSON), the upload (gzip) and what it decompresses to. */
  readonly statusBodyBytes: number;
  readonly logsBodyBytes: number;
  readonly logsJsonBytes: number;
}

export interface FleetOptions {
  readonly agents: number;
  readonly token: string;
  /** The revision every agent reports active (the one served: every agent is current). */
  readonly revision: string;
  /** Decisions per upload. */
  readonly events: number;
  readonly seed: number;
}

/**
 * Every agent's two requests. The decisions are OPA's answers to the requests bench/http.ts sends
 * (the 10-rule tenant's, half allowed), each with the input document OPA evaluated.
 */
export function fleetRequests(o: FleetOptions): FleetRequests {
  const r = rng(o.seed);
  const bodies = decisionBodies(tenantRules(10), 2_000, o.seed);
  const agents: AgentRequests[] = [];
  let statusBodyBytes = 0;
  let logsBodyBytes = 0;
  let logsJsonBytes = 0;
  for (let k = 0; k < o.agents; k++) {
    const id = uuid(r);
    const report = Buffer.from(JSON.stringify(statusReport(id, { [BUNDLE]: { revision: o.revision } })));
    const events = Array.from({ length: o.events }, (_, j) => {
      const i = k * o.events + j;
      const b = i % bodies.length;
      return decisionEvent(
        i,
        {
          labels: { id, version: '1.1.0' },
          decision_id: uuid(r),
          input: opaInput(bodies[b] as (typeof bodies)[number]),
          result: b % 2 === 0,
          requested_by: `10.1.${(k >> 8) & 255}.${k & 255}:${40_000 + (i % 20_000)}`,
        },
        BUNDLE,
        o.revision,
      );
    });
    const json = Buffer.from(JSON.stringify(events));
    const gz = gzipSync(json);
    agents.push({ id, status: request(STATUS_PATH, o.token, report, false), logs: request(LOGS_PATH, o.token, gz, true) });
    statusBodyBytes += report.length;
    logsBodyBytes += gz.length;
    logsJsonBytes += json.length;
  }
  const n = Math.max(1, o.agents);
  return { agents, statusBodyBytes: statusBodyBytes / n, logsBodyBytes: logsBodyBytes / n, logsJsonBytes: logsJsonBytes / n };
}
