// A real OPA polling the running service: the path every sidecar takes. Runs only when OPA_BIN points
// at an opa binary (CI runs it with OPA 1.1 and 0.61); without it the suite reports itself skipped,
// and with an OPA_BIN that does not run, every test fails.
//
// Each test starts the standalone service (over http, then over https with its self-signed
// certificate as `ca_cert`) and `opa run --server` with the configuration `acl-operator serve`
// recommends (opaConfig: bearer token_path, long polling). OPA's token_path is a copy of the
// connector token that the test owns, so it can play an OPA whose token file has not been updated yet.
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { opaConfig, type OpaSigning } from '../../src/opa/index.ts';
import { ringKeys } from '../../src/signing/index.ts';
import { bundleKey, type SyncRecord } from '../../src/store/index.ts';
import { OUTPUT_LINES, opaJson, opaVersion, runOpa, SIDECARS, sidecarsManifest, waitForOpa, type RunningOpa } from '../support/opa.ts';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

const OPA_BIN = process.env['OPA_BIN'];

const { tenant: TENANT, connector: CONNECTOR, bundle: BUNDLE } = SIDECARS;
/** The issue's promise: with long polling, a rule edit is enforced by OPA within this. */
const EDIT_TO_OPA_MS = 2000;

const connectors = (tokenRotation: number): string => sidecarsManifest(`{ tokenRotation: ${tokenRotation} }`);

// The bundle carries every Enforced rule of the tenant, so OPA and POST /authorization decide over
// the same rules.
const RULES = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: team-documents, namespace: acme }
spec: { state: Enforced, subjectType: user, actions: [read, write], resourceType: document, condition: principal.team == resource.team }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: owners-delete-documents, namespace: acme }
spec: { state: Enforced, subjectType: user, actions: [delete], resourceType: document, condition: 'resource.owner == principal.id && !(resource.legalHold == true)' }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: admins-manage-documents, namespace: acme }
spec: { state: Enforced, subjectType: user, actions: [read, write, delete, share], resourceType: document, condition: '"admin" in principal.roles' }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: office-network-reports, namespace: acme }
spec: { state: Enforced, subjectType: user, actions: [read], resourceType: report, condition: '"analyst" in principal.roles && cidr("10.20.0.0/16").containsIP(context.ipAddress)' }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: business-hours-expenses, namespace: acme }
spec:
  state: Enforced
  subjectType: user
  actions: [approve]
  resourceType: expense
  condition: >-
    principal.department == resource.department && principal.level >= 3
    && timestamp(context.timeOfDay).getHours() >= 8 && timestamp(context.timeOfDay).getHours() < 18
    && !(timestamp(context.timeOfDay).getDayOfWeek() in [0, 6])
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: indexer-reads-published, namespace: acme }
spec: { state: Enforced, subjectType: service_account, actions: [read], resourceType: document, condition: 'resource.status == "published" && principal.id.startsWith("indexer-")' }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: contractors-comment, namespace: acme }
spec: { state: Proposed, subjectType: contractor, actions: [comment], resourceType: document }
`;

const MANIFESTS: Record<string, string> = {
  'connectors.yaml': connectors(0),
  'rules.yaml': RULES,
  'keys.yaml': BASE_MANIFESTS['keys.yaml'] as string,
};

/** The edit the timed tests make: a rule that allows exactly the action `probe-<n>`. */
const probeRule = (n: number): string => `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: probe, namespace: ${TENANT} }
spec: { state: Enforced, subjectType: user, actions: [probe-${n}], resourceType: document }
`;
const probeInput = (n: number): Record<string, unknown> => ({
  principal: { type: 'user', id: 'p' },
  action: `probe-${n}`,
  resource: { type: 'document', id: 'd' },
});

// ---------------------------------------------------------------------------------------------
// Decision inputs: allows and denies of every rule, missing attributes, wrong types, exact matching.

type Attrs = Record<string, unknown>;
interface Entity {
  readonly type: string;
  readonly id: string;
  readonly properties?: Attrs;
  readonly [attribute: string]: unknown;
}
interface Case {
  readonly name: string;
  readonly subject: Entity;
  readonly action: string;
  readonly resource: Entity;
  readonly context?: Attrs;
}

const user = (id: string, attrs: Attrs = {}): Entity => ({ ...attrs, type: 'user', id });
const doc = (attrs: Attrs = {}): Entity => ({ ...attrs, type: 'document', id: 'doc-1' });
const report: Entity = { type: 'report', id: 'q3' };
const expense = (attrs: Attrs = {}): Entity => ({ ...attrs, type: 'expense', id: 'exp-7' });
const manager = (attrs: Attrs = {}): Entity => user('mia', { department: 'sales', level: 3, ...attrs });
const WEDNESDAY_0930 = '2026-03-11T09:30:00Z';

const CASES: readonly Case[] = [
  // team-documents
  { name: 'same team reads', subject: user('alice', { team: 'blue' }), action: 'read', resource: doc({ team: 'blue' }) },
  { name: 'same team writes', subject: user('alice', { team: 'blue' }), action: 'write', resource: doc({ team: 'blue' }) },
  { name: 'same team shares', subject: user('alice', { team: 'blue' }), action: 'share', resource: doc({ team: 'blue' }) },
  { name: 'other team reads', subject: user('alice', { team: 'red' }), action: 'read', resource: doc({ team: 'blue' }) },
  { name: 'subject without team', subject: user('alice'), action: 'read', resource: doc({ team: 'blue' }) },
  { name: 'document without team', subject: user('alice', { team: 'blue' }), action: 'read', resource: doc() },
  { name: 'teams as equal numbers', subject: user('alice', { team: 5 }), action: 'read', resource: doc({ team: 5.0 }) },
  { name: 'team "5" against 5', subject: user('alice', { team: '5' }), action: 'read', resource: doc({ team: 5 }) },
  { name: 'both teams null', subject: user('alice', { team: null }), action: 'read', resource: doc({ team: null }) },
  { name: 'teams as equal lists', subject: user('alice', { team: ['blue'] }), action: 'read', resource: doc({ team: ['blue'] }) },
  { name: 'teams as equal maps', subject: user('alice', { team: { unit: 'x' } }), action: 'read', resource: doc({ team: { unit: 'x' } }) },
  { name: 'team list against string', subject: user('alice', { team: ['blue'] }), action: 'read', resource: doc({ team: 'blue' }) },
  {
    name: 'team from properties',
    subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
    action: 'read',
    resource: { type: 'document', id: 'd', properties: { team: 'blue' } },
  },
  {
    name: 'top-level team wins over properties',
    subject: { type: 'user', id: 'alice', team: 'red', properties: { team: 'blue' } },
    action: 'read',
    resource: doc({ team: 'blue' }),
  },
  {
    name: 'type and id in properties are ignored',
    subject: { type: 'user', id: 'alice', properties: { type: 'robot', team: 'blue' } },
    action: 'read',
    resource: doc({ team: 'blue' }),
  },
  { name: 'non-ASCII team', subject: user('alice', { team: 'blé 𝒜' }), action: 'read', resource: doc({ team: 'blé 𝒜' }) },
  { name: 'subject type User', subject: { type: 'User', id: 'alice', team: 'blue' }, action: 'read', resource: doc({ team: 'blue' }) },
  { name: 'action Read', subject: user('alice', { team: 'blue' }), action: 'Read', resource: doc({ team: 'blue' }) },
  { name: 'action with a trailing space', subject: user('alice', { team: 'blue' }), action: 'read ', resource: doc({ team: 'blue' }) },
  {
    name: 'unknown resource type',
    subject: user('alice', { team: 'blue' }),
    action: 'read',
    resource: { type: 'folder', id: 'f', team: 'blue' },
  },
  // owners-delete-documents
  { name: 'owner deletes', subject: user('alice'), action: 'delete', resource: doc({ owner: 'alice' }) },
  { name: 'owner deletes under legal hold', subject: user('alice'), action: 'delete', resource: doc({ owner: 'alice', legalHold: true }) },
  {
    name: 'owner deletes, legal hold false',
    subject: user('alice'),
    action: 'delete',
    resource: doc({ owner: 'alice', legalHold: false }),
  },
  {
    name: 'owner deletes, legal hold "true"',
    subject: user('alice'),
    action: 'delete',
    resource: doc({ owner: 'alice', legalHold: 'true' }),
  },
  { name: 'owner deletes, legal hold null', subject: user('alice'), action: 'delete', resource: doc({ owner: 'alice', legalHold: null }) },
  { name: 'non-owner deletes', subject: user('bob'), action: 'delete', resource: doc({ owner: 'alice' }) },
  { name: 'document without owner', subject: user('alice'), action: 'delete', resource: doc() },
  { name: 'owner as a number', subject: user('7'), action: 'delete', resource: doc({ owner: 7 }) },
  // admins-manage-documents
  { name: 'admin shares', subject: user('root', { roles: ['admin'] }), action: 'share', resource: doc() },
  {
    name: 'admin among other roles',
    subject: user('root', { roles: ['viewer', 'admin'] }),
    action: 'delete',
    resource: doc({ legalHold: true }),
  },
  { name: 'viewer shares', subject: user('root', { roles: ['viewer'] }), action: 'share', resource: doc() },
  { name: 'roles as a string', subject: user('root', { roles: 'admin' }), action: 'share', resource: doc() },
  { name: 'roles as a map with key admin', subject: user('root', { roles: { admin: true } }), action: 'share', resource: doc() },
  { name: 'roles empty', subject: user('root', { roles: [] }), action: 'share', resource: doc() },
  { name: 'roles null', subject: user('root', { roles: null }), action: 'share', resource: doc() },
  { name: 'no roles', subject: user('root'), action: 'share', resource: doc() },
  // office-network-reports
  {
    name: 'analyst in the office',
    subject: user('ann', { roles: ['analyst'] }),
    action: 'read',
    resource: report,
    context: { ipAddress: '10.20.1.7' },
  },
  {
    name: 'analyst outside the office',
    subject: user('ann', { roles: ['analyst'] }),
    action: 'read',
    resource: report,
    context: { ipAddress: '10.21.0.1' },
  },
  { name: 'analyst, no address', subject: user('ann', { roles: ['analyst'] }), action: 'read', resource: report, context: {} },
  { name: 'analyst, no context at all', subject: user('ann', { roles: ['analyst'] }), action: 'read', resource: report },
  {
    name: 'analyst, address as a number',
    subject: user('ann', { roles: ['analyst'] }),
    action: 'read',
    resource: report,
    context: { ipAddress: 169083143 },
  },
  {
    name: 'analyst, address not an IP',
    subject: user('ann', { roles: ['analyst'] }),
    action: 'read',
    resource: report,
    context: { ipAddress: 'office' },
  },
  {
    name: 'analyst, IPv6 address',
    subject: user('ann', { roles: ['analyst'] }),
    action: 'read',
    resource: report,
    context: { ipAddress: '::ffff:10.20.1.7' },
  },
  {
    name: 'non-analyst in the office',
    subject: user('ann', { roles: ['viewer'] }),
    action: 'read',
    resource: report,
    context: { ipAddress: '10.20.1.7' },
  },
  // business-hours-expenses
  {
    name: 'manager approves on Wednesday morning',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: WEDNESDAY_0930 },
  },
  {
    name: 'manager of level 3.5',
    subject: manager({ level: 3.5 }),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: WEDNESDAY_0930 },
  },
  {
    name: 'manager of level 2',
    subject: manager({ level: 2 }),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: WEDNESDAY_0930 },
  },
  {
    name: 'level "3" as a string',
    subject: manager({ level: '3' }),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: WEDNESDAY_0930 },
  },
  {
    name: 'other department',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'ops' }),
    context: { timeOfDay: WEDNESDAY_0930 },
  },
  {
    name: 'on Saturday',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: '2026-03-14T10:00:00Z' },
  },
  {
    name: 'at 18:00',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: '2026-03-11T18:00:00Z' },
  },
  {
    name: 'at 07:59:59',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: '2026-03-11T07:59:59Z' },
  },
  {
    name: 'time with an offset (07:30 UTC)',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: '2026-03-11T09:30:00+02:00' },
  },
  {
    name: 'time with an offset (09:30 UTC)',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: '2026-03-11T07:30:00-02:00' },
  },
  {
    name: 'time not a timestamp',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: 'morning' },
  },
  {
    name: 'time as a number',
    subject: manager(),
    action: 'approve',
    resource: expense({ department: 'sales' }),
    context: { timeOfDay: 1773221400 },
  },
  // indexer-reads-published
  {
    name: 'indexer reads a published document',
    subject: { type: 'service_account', id: 'indexer-1' },
    action: 'read',
    resource: doc({ status: 'published' }),
  },
  {
    name: 'crawler reads a published document',
    subject: { type: 'service_account', id: 'crawler-1' },
    action: 'read',
    resource: doc({ status: 'published' }),
  },
  {
    name: 'indexer reads a draft',
    subject: { type: 'service_account', id: 'indexer-1' },
    action: 'read',
    resource: doc({ status: 'draft' }),
  },
  // contractors-comment is Proposed: served by nobody
  { name: 'contractor comments (rule only Proposed)', subject: { type: 'contractor', id: 'c' }, action: 'comment', resource: doc() },
];

/** The decision input OPA sees for a POST /authorization body (src/http/request.ts, written out again here). */
function opaInput(c: Case): Attrs {
  const entity = ({ properties, ...rest }: Entity): Attrs => ({ ...properties, ...rest, type: rest.type, id: rest.id });
  return {
    principal: entity(c.subject),
    action: c.action,
    resource: entity(c.resource),
    ...(c.context === undefined ? {} : { context: c.context }),
  };
}

// ---------------------------------------------------------------------------------------------
// One service and one OPA per test

type Mode = 'http' | 'https';

interface Running {
  readonly mode: Mode;
  readonly t: TestService;
  readonly opa: RunningOpa;
  /** OPA's token_path: a copy of the connector token that only the test updates. */
  readonly tokenFile: string;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

function served(t: TestService): { revision: number; etag: string } {
  const b = t.service.store.snapshot().tenants.get(TENANT)?.bundles.get(BUNDLE);
  if (!b) throw new Error(`the service serves no bundle ${TENANT}/${BUNDLE}`);
  return { revision: b.built.revision, etag: b.built.etag };
}

/** Bundle requests refused 401 so far (they are counted, not recorded in the sync activity). */
async function refused401(r: Running): Promise<number> {
  const text = await (await r.t.ops('/metrics')).text();
  return Number(/^acl_bundle_requests_unrecorded_total\{code="401"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

function activity(r: Running): readonly SyncRecord[] {
  return r.t.service.store.activity.list(bundleKey(TENANT, BUNDLE));
}

/** What the service saw: its bundle and the newest bundle requests. */
function serviceSide(r: Running): string {
  const records = activity(r)
    .slice(0, 15)
    .map((a) => `  ${a.time} ${a.status} revision ${a.revision} ${a.userAgent}`);
  let bundle: string;
  try {
    const s = served(r.t);
    bundle = `revision ${s.revision}, ETag ${s.etag}`;
  } catch (err) {
    bundle = String(err);
  }
  return [
    `service (${r.mode}) at ${r.t.service.apiUrl}: ${bundle}, held long polls ${r.t.service.longPolls.size()}`,
    'bundle requests, newest first:',
    ...records,
  ].join('\n');
}

function diagnostics(r: Running): string {
  return [
    serviceSide(r),
    `OPA at ${r.opa.url}${r.opa.ended() ? ` (${r.opa.ended()})` : ''}, last ${OUTPUT_LINES} lines:`,
    r.opa.output(),
  ].join('\n');
}

/** Polls `probe` until it returns a value; fails with everything we know if the deadline passes or OPA dies. */
function waitFor<T>(r: Running, what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  return waitForOpa(r.opa, what, timeoutMs, probe, () => serviceSide(r));
}

function field(value: unknown, ...path: string[]): unknown {
  let v = value;
  for (const k of path) v = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** data.acl.allow for an input; an undefined result means no policy is loaded, which is a failure. */
async function opaAllow(r: Running, input: unknown): Promise<boolean> {
  const res = await opaJson(r.opa, '/v1/data/acl/allow', { input });
  const result = field(res.body, 'result');
  if (res.status !== 200 || typeof result !== 'boolean')
    throw new Error(`OPA answered ${res.status} ${JSON.stringify(res.body)} for data.acl.allow: is the bundle activated?`);
  return result;
}

/**
 * What OPA has activated: it keeps each bundle's manifest at data.system.bundles.<name>.manifest
 * (and, in recent versions, the ETag it was served at .etag), readable through the Data API without
 * the status plugin.
 */
async function opaBundle(r: Running): Promise<{ revision: unknown; etag: unknown }> {
  const res = await opaJson(r.opa, `/v1/data/system/bundles/${BUNDLE}`);
  if (res.status !== 200) throw new Error(`OPA answered ${res.status} ${JSON.stringify(res.body)} for data.system.bundles`);
  return { revision: field(res.body, 'result', 'manifest', 'revision'), etag: field(res.body, 'result', 'etag') };
}

/** POST /authorization at the URL OPA polls, trusting the service's certificate over https. */
async function authorize(r: Running, body: unknown): Promise<{ status: number; body: unknown }> {
  const url = new URL(`${r.t.service.apiUrl}/authorization`);
  const ca = r.t.service.caFile === undefined ? undefined : await readFile(r.t.service.caFile);
  const payload = JSON.stringify(body);
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(payload)),
    Authorization: `Bearer ${API_KEY}`,
  };
  return new Promise((resolve, reject) => {
    const req = (ca ? httpsRequest(url, { method: 'POST', headers, ca }) : httpRequest(url, { method: 'POST', headers }))
      .on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown }));
        res.on('error', reject);
      })
      .on('error', reject);
    req.end(payload);
  });
}

async function replaceFile(file: string, text: string): Promise<void> {
  // A rename, so OPA (which reads token_path for every request) never reads half a token.
  await writeFile(`${file}.new`, text, { mode: 0o600 });
  await rename(`${file}.new`, file);
}

/** Which tenant, connector and bundle an OPA polls, and the manifests the service serves. */
interface Target {
  readonly manifests: Record<string, string>;
  readonly tenant: string;
  readonly connector: string;
  readonly bundle: string;
}
const ACME: Target = { manifests: MANIFESTS, tenant: TENANT, connector: CONNECTOR, bundle: BUNDLE };

async function start(bin: string, mode: Mode, target: Target = ACME): Promise<Running> {
  const t = await startTestService({ tls: mode === 'https' ? { mode: 'self-signed' } : { mode: 'insecure' }, manifests: target.manifests });
  cleanups.push(async () => {
    await t.stop();
    await rm(dirname(t.manifests), { recursive: true, force: true });
  });
  // The listener is on 127.0.0.1; the self-signed certificate covers localhost, 127.0.0.1 and ::1.
  expect(t.service.apiUrl).toMatch(mode === 'https' ? /^https:\/\// : /^http:\/\//);
  expect(t.service.caFile === undefined).toBe(mode === 'http');
  const dir = await mkdtemp(join(tmpdir(), 'acl-opa-run-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const tokenFile = join(dir, 'token');
  await replaceFile(tokenFile, await t.token(target.tenant, target.connector));
  const configFile = join(dir, 'opa.yaml');
  // Exactly what `acl-operator serve` writes for the connector: the URL it prints, ca_cert, token_path,
  // persist (into `dir`, OPA's working directory), polling with long_polling_timeout_seconds, and the
  // signing block pinned to the key the service signs with.
  const keys = t.service.signing.get();
  const signing: OpaSigning | undefined =
    keys.unsigned || !keys.ring
      ? undefined
      : { keyid: keys.ring.current.kid, keys: ringKeys(keys.ring).map((k) => ({ kid: k.kid, publicKeyPem: k.publicKeyPem })) };
  await writeFile(
    configFile,
    opaConfig({
      url: t.service.apiUrl,
      caFile: t.service.caFile,
      tokenFile,
      tenant: target.tenant,
      connector: target.connector,
      bundle: target.bundle,
      signing,
    }),
  );
  const opa = await runOpa(bin, configFile, dir);
  cleanups.push(() => opa.stop());
  const r: Running = { mode, t, opa, tokenFile };
  onTestFailed(() => {
    console.error(`--- ${mode}: what the service and OPA saw\n${diagnostics(r)}`);
  });
  await waitFor(r, 'GET /health?bundles to answer 200 (every bundle activated)', 30_000, async () =>
    (await opaJson(r.opa, '/health?bundles')).status === 200 ? true : undefined,
  );
  return r;
}

/** OPA holds a request with `Prefer: wait=N`: the only way the service can push an edit at once. */
async function waitForLongPoll(r: Running): Promise<void> {
  await waitFor(r, 'OPA to hold a long poll on the bundle (Prefer: wait=N)', 10_000, () =>
    r.t.service.longPolls.size() > 0 ? true : undefined,
  );
}

/** Writes the probe rule n; returns how long it took until OPA had the new revision and decided with it. */
async function timeEditToOpa(r: Running, n: number): Promise<{ revision: number; elapsedMs: number }> {
  await waitForLongPoll(r);
  expect(await opaAllow(r, probeInput(n))).toBe(false);
  const before = served(r.t).revision;
  const started = performance.now();
  await r.t.write('probe.yaml', probeRule(n));
  const { revision } = served(r.t);
  expect(revision).toBeGreaterThan(before);
  // A deadline well past 2 s, so that a slow arrival is reported with its time rather than as a timeout.
  const elapsedMs = await waitFor(r, `OPA to activate revision ${revision} and allow action probe-${n}`, 5 * EDIT_TO_OPA_MS, async () => {
    const { revision: active } = await opaBundle(r);
    return active === String(revision) && (await opaAllow(r, probeInput(n))) ? performance.now() - started : undefined;
  });
  return { revision, elapsedMs };
}

if (OPA_BIN)
  describe(`OPA polling the service (OPA_BIN=${OPA_BIN})`, () => {
    beforeAll(() => {
      const version = opaVersion(OPA_BIN);
      // Our bundles are made for OPA 0.40 and later (BundleSpec.regoVersion).
      if (version[0] === 0 && version[1] < 40) throw new Error(`OPA ${version.join('.')} is too old: these tests need OPA 0.40 or later`);
    });

    for (const mode of ['http', 'https'] as const) {
      describe(`over ${mode}${mode === 'https' ? ' with the self-signed certificate as ca_cert' : ''}`, () => {
        it('activates the revision the service serves, fetched with the token from token_path', async () => {
          const r = await start(OPA_BIN, mode);
          const { revision, etag } = served(r.t);
          const active = await opaBundle(r);
          expect(active.revision).toBe(String(revision));
          // Older OPAs do not record the ETag under data.system.bundles; when they do, it is ours.
          if (active.etag !== undefined) expect(active.etag).toBe(etag);
          const records = activity(r);
          expect(records.map((a) => a.status)).toContain(200);
          expect(records.filter((a) => a.status !== 200 && a.status !== 304)).toEqual([]);
          expect(records.every((a) => a.userAgent.startsWith('Open Policy Agent/'))).toBe(true);
        });

        it('decides like POST /authorization for allowed, denied, incomplete and mistyped inputs', async () => {
          const r = await start(OPA_BIN, mode);
          const mismatches: string[] = [];
          let allowed = 0;
          for (const c of CASES) {
            const res = await authorize(r, {
              subject: c.subject,
              action: c.action,
              resource: c.resource,
              ...(c.context === undefined ? {} : { context: c.context }),
            });
            expect(res.status, `${c.name}: ${JSON.stringify(res.body)}`).toBe(200);
            const ours = field(res.body, 'decision') === 'allow';
            const theirs = await opaAllow(r, opaInput(c));
            if (ours) allowed++;
            if (ours !== theirs)
              mismatches.push(
                `${c.name}: POST /authorization ${ours ? 'allows' : 'denies'}, OPA ${theirs ? 'allows' : 'denies'} ${JSON.stringify(opaInput(c))}`,
              );
          }
          expect(mismatches).toEqual([]);
          // Agreement on all-deny would prove nothing.
          expect(allowed).toBeGreaterThanOrEqual(15);
          expect(CASES.length - allowed).toBeGreaterThanOrEqual(15);
        });

        it(`enforces a rule edit within ${EDIT_TO_OPA_MS / 1000} s through long polling`, async () => {
          const r = await start(OPA_BIN, mode);
          const { elapsedMs } = await timeEditToOpa(r, 1);
          expect(elapsedMs, `the edit reached OPA after ${Math.round(elapsedMs)} ms`).toBeLessThan(EDIT_TO_OPA_MS);
        });

        it('gets 401 after a token rotation until its token file is updated, then recovers', async () => {
          const r = await start(OPA_BIN, mode);
          await waitForLongPoll(r);
          const before = served(r.t).revision;
          const oldToken = await r.t.token(TENANT, CONNECTOR);
          const rotatedAt = new Date().toISOString();
          const refusedBefore = await refused401(r);
          await r.t.write('connectors.yaml', connectors(1));
          const newToken = await r.t.token(TENANT, CONNECTOR);
          expect(newToken).not.toBe(oldToken);

          // The rotation releases OPA's held request with 304 (the bundle did not change), so OPA asks
          // again at once with the token its file holds: still the old one, refused 401. An edit then
          // reaches nobody: every later request carries the old token and is refused.
          await r.t.write('probe.yaml', probeRule(2));
          const { revision } = served(r.t);
          expect(revision).toBe(before + 1);
          const since = (time: string): number[] =>
            activity(r)
              .filter((a) => a.time >= time)
              .map((a) => a.status);
          // Refused requests stay out of the sync activity (they did not authenticate as the connector):
          // they are counted in acl_bundle_requests_unrecorded_total.
          await waitFor(r, 'OPA to be refused twice with the rotated token', 30_000, async () =>
            (await refused401(r)) - refusedBefore >= 2 ? true : undefined,
          );
          // At most the released poll (a 304) entered the activity since the rotation: nothing was served.
          expect(since(rotatedAt).filter((s) => s !== 304)).toEqual([]);
          expect((await opaBundle(r)).revision).toBe(String(before));
          expect(await opaAllow(r, probeInput(2))).toBe(false);

          // OPA reads token_path for every request: the new token is used at its next retry.
          const updatedAt = new Date().toISOString();
          await replaceFile(r.tokenFile, newToken);
          // OPA backs off after errors (up to max_delay_seconds), hence the long deadline.
          await waitFor(r, `OPA to activate revision ${revision} with the new token`, 45_000, async () =>
            (await opaBundle(r)).revision === String(revision) ? true : undefined,
          );
          expect(await opaAllow(r, probeInput(2))).toBe(true);
          expect(since(updatedAt)).toContain(200);

          // And it is back on long polling: the next edit again arrives within 2 s.
          const next = await timeEditToOpa(r, 3);
          expect(next.elapsedMs, `the edit reached OPA after ${Math.round(next.elapsedMs)} ms`).toBeLessThan(EDIT_TO_OPA_MS);
        }, 120_000);
      });
    }
  });

// ---------------------------------------------------------------------------------------------
// AuthZEN: tenant "records" of examples/ (the certification fixture), whose rules read a Directory
// and action properties. OPA gets only the bundle, so it must find the directory data in policy.rego.

const EXAMPLES = join(import.meta.dirname, '..', '..', 'examples');
const RECORDS: Target = {
  manifests: Object.fromEntries(
    ['records-rules.yaml', 'records-directory.yaml', 'records-api-key.yaml', 'records-distribution.yaml'].map((f) => [
      f,
      readFileSync(join(EXAMPLES, f), 'utf8'),
    ]),
  ),
  tenant: 'records',
  connector: 'record-services',
  bundle: 'records',
};
const RECORDS_KEY = 'records-example-key-for-local-use-only';

interface AuthzenCase {
  readonly subject: Entity;
  readonly action: { readonly name: string; readonly properties?: Attrs };
  readonly resource: Entity;
}

/** Every user (three in the directory, one not) × action × record (three in the directory, one not), with and without request properties. */
function authzenCases(): AuthzenCase[] {
  const subjects: Entity[] = [
    ...['alice', 'bob', 'carol', 'dave'].map((id) => ({ type: 'user', id })),
    { type: 'user', id: 'bob', properties: { role: 'member' } },
    { type: 'user', id: 'carol', properties: { groups: ['staff'], role: 'admin' } },
    { type: 'user', id: 'dave', properties: { groups: ['staff'] } },
  ];
  const actions = [
    { name: 'read' },
    { name: 'write' },
    { name: 'delete' },
    { name: 'delete', properties: { soft: true } },
    { name: 'delete', properties: { soft: 'true' } },
  ];
  const resources: Entity[] = [
    ...['record-1', 'record-2', 'record-3', 'record-9'].map((id) => ({ type: 'record', id })),
    { type: 'record', id: 'record-1', properties: { status: 'archived' } },
    { type: 'record', id: 'record-9', properties: { owner: 'dave', status: 'active' } },
  ];
  return subjects.flatMap((subject) => actions.flatMap((action) => resources.map((resource) => ({ subject, action, resource }))));
}

/** The decision input for an AuthZEN request, as docs/authzen.md maps it (written out again here). */
function authzenInput(c: AuthzenCase): Attrs {
  const entity = ({ properties, ...rest }: Entity): Attrs => ({ ...properties, ...rest, type: rest.type, id: rest.id });
  return { principal: entity(c.subject), action: c.action.name, resource: entity(c.resource), actionProperties: c.action.properties ?? {} };
}

if (OPA_BIN)
  describe(`OPA on an AuthZEN tenant's bundle (OPA_BIN=${OPA_BIN})`, () => {
    it('decides like POST /access/v1/evaluation with only type and id sent, through the directory in the bundle', async () => {
      const r = await start(OPA_BIN, 'http', RECORDS);
      expect(r.t.service.store.snapshot().tenants.get('records')?.bundles.get('records')?.built.rego).toContain('acl_directory');
      const mismatches: string[] = [];
      let allowed = 0;
      const cases = authzenCases();
      for (const c of cases) {
        const res = await fetch(`${r.t.service.apiUrl}/access/v1/evaluation`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${RECORDS_KEY}` },
          body: JSON.stringify(c),
        });
        const body = (await res.json()) as { decision?: unknown };
        expect(res.status, JSON.stringify(body)).toBe(200);
        const ours = body.decision === true;
        const theirs = await opaAllow(r, authzenInput(c));
        if (ours) allowed++;
        if (ours !== theirs)
          mismatches.push(`${JSON.stringify(c)}: the PDP ${ours ? 'allows' : 'denies'}, OPA ${theirs ? 'allows' : 'denies'}`);
      }
      expect(mismatches).toEqual([]);
      // Both outcomes, many times: agreement on all-deny would prove nothing.
      expect(allowed).toBeGreaterThanOrEqual(20);
      expect(cases.length - allowed).toBeGreaterThanOrEqual(20);
    });
  });
else
  describe('OPA polling the service', () => {
    it.skip('is skipped: set OPA_BIN to the path of an opa binary to run it (make test-opa)', () => {});
  });
