// AdmissionReview (admission.k8s.io/v1) as the API server sends it to a validating webhook, read at
// the edge, and the answer it expects. A body that is not such a review is a failure with a message
// (and the request's uid, when it has one), never a throw.
import { z } from 'zod';
import { API_VERSION, describeIssues, isObject } from '../api/index.ts';
import type { JudgedKind } from './spec.ts';

export const REVIEW_API_VERSION = 'admission.k8s.io/v1';
/** acl.policyagent.dev */
const GROUP = API_VERSION.slice(0, API_VERSION.indexOf('/'));

const JUDGED: readonly JudgedKind[] = ['Rule', 'Connector', 'Bundle', 'Directory'];

/** The fields of `request` we read; the API server sends more (userInfo, options, ...), which are ignored. */
const AdmissionRequest = z.object({
  uid: z.string().min(1).max(256),
  kind: z.object({ group: z.string(), version: z.string(), kind: z.string() }),
  operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
  subResource: z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
  object: z.unknown().optional(),
  oldObject: z.unknown().optional(),
});

/** One review: what is asked about which object. */
export interface Review {
  readonly uid: string;
  readonly kind: JudgedKind;
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  /** Set when the request is for a subresource (status, scale): its spec is not what changes. */
  readonly subResource: string | undefined;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  /** The object as it would be stored (CREATE, UPDATE); undefined for DELETE and CONNECT. */
  readonly object: Readonly<Record<string, unknown>> | undefined;
  /** The object as stored before an UPDATE. */
  readonly oldObject: Readonly<Record<string, unknown>> | undefined;
}

export type ReviewRead =
  | { readonly ok: true; readonly review: Review }
  | { readonly ok: false; readonly message: string; readonly uid: string | undefined };

/** The request's uid when the body has one, read before anything else is checked, so a failure can carry it. */
function uidOf(body: Record<string, unknown>): string | undefined {
  const request = body['request'];
  const uid = isObject(request) ? request['uid'] : undefined;
  return typeof uid === 'string' && uid.length > 0 && uid.length <= 256 ? uid : undefined;
}

function quoted(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v.slice(0, 100)) : v === undefined ? 'none' : typeof v;
}

/** Reads a parsed JSON body as an AdmissionReview v1 for one of our kinds, or says what is wrong with it. */
export function readReview(body: unknown): ReviewRead {
  if (!isObject(body)) return { ok: false, message: 'the body is not an AdmissionReview: expected a JSON object', uid: undefined };
  const uid = uidOf(body);
  const fail = (message: string): ReviewRead => ({ ok: false, message, uid });
  if (body['apiVersion'] !== REVIEW_API_VERSION)
    return fail(
      `apiVersion must be ${REVIEW_API_VERSION} (admissionReviewVersions: [v1] in the webhook), got ${quoted(body['apiVersion'])}`,
    );
  if (body['kind'] !== 'AdmissionReview') return fail(`kind must be AdmissionReview, got ${quoted(body['kind'])}`);
  if (!isObject(body['request'])) return fail('request is missing: expected the AdmissionRequest object');
  const parsed = AdmissionRequest.safeParse(body['request']);
  if (!parsed.success) return fail(`request is not an AdmissionRequest: ${describeIssues(parsed.error).slice(0, 500)}`);
  const r = parsed.data;
  const kind = JUDGED.find((k) => k === r.kind.kind);
  if (r.kind.group !== GROUP || kind === undefined)
    return fail(
      `acl-operator reviews Rule, Connector, Bundle and Directory of ${GROUP}, not ${r.kind.group || 'core'}/${r.kind.version} ${r.kind.kind}: check the webhook's rules`,
    );
  const changes = r.operation === 'CREATE' || r.operation === 'UPDATE';
  if (changes && r.subResource === undefined && !isObject(r.object))
    return fail(`request.object is required for ${r.operation}: expected the ${kind} as it would be stored`);
  return {
    ok: true,
    review: {
      uid: r.uid,
      kind,
      operation: r.operation,
      subResource: r.subResource || undefined,
      namespace: r.namespace || undefined,
      name: r.name || undefined,
      object: changes && isObject(r.object) ? r.object : undefined,
      oldObject: r.operation === 'UPDATE' && isObject(r.oldObject) ? r.oldObject : undefined,
    },
  };
}
