// OPA's status report (status plugin, POST <service url>/status[/<partition>]), parsed once at the
// edge: who the OPA is (labels.id, labels.version) and what it says about each bundle it is
// configured with. Everything else in the report (plugin states, OPA 1.x's ~45 KB of Prometheus
// metrics) is ignored. Shape checked against real OPA 0.61 and 1.1 reports (test/opa/fleet.test.ts).
import { z } from 'zod';

/** OPA's zero time (Go's time.Time{}), which it sends for "never". */
const NEVER = /^0001-01-01T/;
/** Longest message kept from a report: enough for OPA's error texts, bounded for memory. */
export const MAX_MESSAGE_CHARS = 512;

/** OPA's labels.id: 1 to 128 printable ASCII characters (a UUID from OPA itself). */
export const AGENT_ID = /^[\x21-\x7e]{1,128}$/;
const AgentId = z.string().regex(AGENT_ID, 'must be 1 to 128 printable ASCII characters');

/**
 * The label naming the key an OPA verifies bundles with: opa/config.ts's SIGNING_KEY_LABEL (a test
 * holds them equal). A constant of our own, because this file runs in the uploads thread, which
 * should not load the OPA configuration printer and its YAML library.
 */
export const SIGNING_KEY_LABEL = 'acl-signing-key';
/**
 * Its value: a kid is `acl-` and 16 hex digits; any 1 to 128 printable ASCII characters are kept.
 * Anything else reads as no label: the report still counts (its agent must hold a rotation back,
 * not vanish from it), and the views say the configuration is not one acl-operator printed.
 */
const SigningKeyLabel = z.string().regex(AGENT_ID).optional().catch(undefined);

const Timestamp = z.string().max(64);
const BundleStatus = z.looseObject({
  active_revision: z.string().max(1024).optional(),
  last_successful_activation: Timestamp.optional(),
  last_successful_download: Timestamp.optional(),
  last_request: Timestamp.optional(),
  code: z.string().max(256).optional(),
  message: z.string().optional(),
  errors: z.array(z.looseObject({ code: z.string().optional(), message: z.string().optional() })).optional(),
  // json.Number in OPA: a number in the JSON, tolerated as a numeric string.
  http_code: z
    .union([
      z.number().int().min(0).max(999),
      z
        .string()
        .regex(/^\d{1,3}$/)
        .transform(Number),
    ])
    .optional(),
});

const Report = z.looseObject({
  labels: z.looseObject({ id: AgentId, version: z.string().max(64).optional(), [SIGNING_KEY_LABEL]: SigningKeyLabel }),
  bundles: z.record(z.string().min(1).max(253), BundleStatus).optional(),
});

/** What one OPA said about one of its bundles. */
export interface BundleReport {
  /** The bundle's key in OPA's configuration: our Bundle's name when configured as we document. */
  readonly name: string;
  readonly activeRevision: string | undefined;
  /** ISO 8601, from OPA's clock; undefined for never. */
  readonly lastActivation: string | undefined;
  readonly lastDownload: string | undefined;
  /** The last download or activation failed: OPA's code (bundle_error, ...) and message. */
  readonly error: { readonly code: string; readonly message: string } | undefined;
  /** HTTP status of the last download, when OPA reports one (it does on errors). */
  readonly httpCode: number | undefined;
  /** The last download was canceled: OPA is stopping (its final report says so). */
  readonly stopping: boolean;
}

export interface StatusReport {
  /** OPA's labels.id. */
  readonly agentId: string;
  /** OPA's labels.version. */
  readonly version: string | undefined;
  /** OPA's labels['acl-signing-key']: the kid it verifies bundles with (undefined: no label, or not a readable one). */
  readonly signingKey: string | undefined;
  readonly bundles: readonly BundleReport[];
}

export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

function clip(text: string): string {
  return text.length <= MAX_MESSAGE_CHARS ? text : `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}

function time(t: string | undefined): string | undefined {
  return t === undefined || t === '' || NEVER.test(t) ? undefined : t;
}

/** The message of a failed download or activation, with OPA's first detailed error when it has one. */
function errorOf(s: z.infer<typeof BundleStatus>): BundleReport['error'] {
  if (s.code === undefined && s.message === undefined) return undefined;
  const detail = s.errors?.find((e) => e.message !== undefined)?.message;
  const message = s.message ?? '';
  return { code: s.code ?? 'error', message: clip(detail !== undefined && !message.includes(detail) ? `${message}: ${detail}` : message) };
}

/** The first problem of a zod error, with its path: `labels.id: Required`. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

/** Bundles one report (or one decision event) may name: a real OPA is configured with a handful. */
export const MAX_BUNDLES_NAMED = 256;

/** Whether a JSON value is an object with more than `max` keys (checked before the schema walks it). */
export function tooManyKeys(v: unknown, max: number): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  let n = 0;
  for (const _ in v) if (++n > max) return true;
  return false;
}

/** Parses a status report; the message names the first problem. */
export function parseStatusReport(body: unknown): Parsed<StatusReport> {
  if (typeof body === 'object' && body !== null && tooManyKeys((body as { bundles?: unknown }).bundles, MAX_BUNDLES_NAMED)) {
    return { ok: false, message: `not an OPA status report: bundles: names more than ${MAX_BUNDLES_NAMED} bundles` };
  }
  const parsed = Report.safeParse(body);
  if (!parsed.success) return { ok: false, message: `not an OPA status report: ${firstIssue(parsed.error)}` };
  const { labels, bundles } = parsed.data;
  return {
    ok: true,
    value: {
      agentId: labels.id,
      version: labels.version,
      signingKey: labels[SIGNING_KEY_LABEL],
      bundles: Object.entries(bundles ?? {}).map(([name, s]) => {
        const error = errorOf(s);
        return {
          name,
          activeRevision: s.active_revision === '' ? undefined : s.active_revision,
          lastActivation: time(s.last_successful_activation),
          lastDownload: time(s.last_successful_download),
          error,
          httpCode: s.http_code,
          // OPA cancels its downloader's context when it stops: "request failed: Get ...: context canceled".
          stopping: error !== undefined && /context canceled$/.test(s.message ?? ''),
        };
      }),
    },
  };
}
