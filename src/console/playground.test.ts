import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RuleSpec } from '../api/index.ts';
import type { BuiltBundle } from '../bundle/index.ts';
import { buildDirectory, buildIndex, compileRule, EMPTY_DIRECTORY, type DecisionInput, type RuleModel } from '../policy/index.ts';
import type { BundleEntry } from '../store/index.ts';
import {
  bundleAdmits,
  bundlesCarrying,
  decideHere,
  examplesFor,
  MAX_REQUEST_CHARS,
  modelOf,
  readRequest,
  runOpa,
  type TenantServed,
} from './playground.ts';

const spec = (over: Partial<RuleSpec> = {}): RuleSpec => ({
  state: 'Enforced',
  subjectType: 'user',
  actions: ['read', 'write'],
  resourceType: 'document',
  condition: 'principal.team == resource.team',
  ...over,
});

function model(name: string, s: RuleSpec): RuleModel {
  const m = modelOf('acme', name, s);
  if (!m) throw new Error(`${name} does not compile`);
  return m;
}

const TEAM = model('team-documents', spec());
const OWNER = model('a-owner', spec({ condition: 'resource.owner == principal.id' }));
const DRAFT = model('draft-public', spec({ state: 'Draft', condition: 'resource.public == true' }));

function bundle(name: string, rules: readonly RuleModel[], entityTypes: readonly string[] = []): BundleEntry {
  const built: BuiltBundle = {
    rego: '',
    regoText: '',
    regoHex: '',
    kid: undefined,
    inputDigest: '',
    revision: 3,
    manifest: '',
    bytes: new Uint8Array(),
    digest: '',
    etag: '',
  };
  return {
    tenant: 'acme',
    name,
    connector: 'gateways',
    built,
    ruleCount: rules.length,
    source: { rules, regoVersion: 1, entityTypes: JSON.stringify(entityTypes), directory: EMPTY_DIRECTORY },
  };
}

function served(rules: readonly RuleModel[]): TenantServed {
  return {
    tenant: 'acme',
    index: buildIndex('acme', rules.map(compileRule)),
    connectors: new Map(),
    bundles: new Map([
      ['docs', bundle('docs', rules, ['document'])],
      ['other', bundle('other', [])],
    ]),
    directory: buildDirectory([{ type: 'user', id: 'bob', properties: { team: 'blue' } }]),
  };
}

function input(text: string): DecisionInput {
  const r = readRequest(text);
  if (!r.ok) throw new Error(r.message);
  return r.input;
}

const request = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
    action: 'read',
    resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
    ...over,
  });

describe('readRequest', () => {
  it('reads the service shape and the AuthZEN shape into the same decision input', () => {
    const service = input(request());
    const authzen = input(request({ action: { name: 'read' } }));
    expect(authzen).toEqual(service);
    expect(service).toMatchObject({ principal: { type: 'user', id: 'alice', team: 'blue' }, action: 'read' });
  });

  it('says where JSON breaks, and what POST /authorization would refuse', () => {
    const bad = readRequest('{"subject": ');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/^Not JSON: /);
    const refused = readRequest(JSON.stringify({ subject: { type: 'user', id: 'a' }, action: 'read' }));
    expect(!refused.ok && refused.message).toBe('POST /authorization would refuse it (400): resource is required');
    expect(!readRequest('  ').ok && readRequest('  ')).toMatchObject({ message: 'Type a request (a JSON object) or pick an example.' });
  });

  it('refuses a request longer than the playground reads, saying how long', () => {
    const r = readRequest(' '.repeat(MAX_REQUEST_CHARS) + request());
    expect(!r.ok && r.message).toMatch(/characters; the playground reads at most 65536\.$/);
  });

  it('refuses numbers a double cannot hold, as the API does', () => {
    const r = readRequest(request({ context: { n: 0 } }).replace('"n":0', '"n":12345678901234567891'));
    expect(!r.ok && r.message).toMatch(/^Not JSON: .*12345678901234567891/);
  });
});

describe('decideHere', () => {
  const tenant = served([OWNER, TEAM]);

  it('names the deciding rule, and says this rule decided', () => {
    const v = decideHere(tenant, 'acme', 'team-documents', TEAM, input(request()));
    expect(v).toMatchObject({ allow: true, rule: 'team-documents', thisRule: { kind: 'decided' } });
  });

  it('says this rule matched too when a rule earlier by name decided', () => {
    const v = decideHere(
      tenant,
      'acme',
      'team-documents',
      TEAM,
      input(
        request({
          subject: { type: 'user', id: 'd1-owner', team: 'blue' },
          resource: { type: 'document', id: 'd1', owner: 'd1-owner', team: 'blue' },
        }),
      ),
    );
    expect(v).toMatchObject({ allow: true, rule: 'a-owner', thisRule: { kind: 'matched-too', by: 'a-owner' } });
  });

  it("gives each candidate's reason on deny, and this rule's own", () => {
    const v = decideHere(tenant, 'acme', 'team-documents', TEAM, input(request({ resource: { type: 'document', id: 'd1', team: 'red' } })));
    expect(v.allow).toBe(false);
    expect(v.reasons).toHaveLength(2);
    expect(v.thisRule).toEqual({
      kind: 'missed',
      reason: 'Rule acme/team-documents did not match: its condition principal.team == resource.team is false',
    });
  });

  it('merges the directory in, as the API does', () => {
    const v = decideHere(tenant, 'acme', 'team-documents', TEAM, input(request({ subject: { type: 'user', id: 'bob' } })));
    expect(v).toMatchObject({ allow: true, rule: 'team-documents' });
  });

  it('says the rule does not apply to a request of other types or actions', () => {
    const v = decideHere(tenant, 'acme', 'team-documents', TEAM, input(request({ action: 'delete' })));
    expect(v.thisRule).toEqual({ kind: 'not-candidate' });
    expect(v.reasons[0]).toMatch(/^No Enforced rule in acme lets a user "delete" a document/);
  });

  it('says what a rule not in force would do were it Enforced', () => {
    const yes = decideHere(
      tenant,
      'acme',
      'draft-public',
      DRAFT,
      input(request({ resource: { type: 'document', id: 'x', public: true } })),
    );
    expect(yes).toMatchObject({ allow: false, thisRule: { kind: 'not-deployed', wouldAllow: true } });
    const no = decideHere(tenant, 'acme', 'draft-public', DRAFT, input(request({ resource: { type: 'document', id: 'x' } })));
    expect(no.thisRule).toMatchObject({
      kind: 'not-deployed',
      wouldAllow: false,
      reason: expect.stringContaining('resource.public is missing'),
    });
  });

  it('decides for a tenant that serves nothing yet', () => {
    const v = decideHere(undefined, 'acme', 'team-documents', undefined, input(request()));
    expect(v).toMatchObject({ allow: false, thisRule: { kind: 'not-candidate' } });
  });
});

describe('examples and bundles', () => {
  it("builds a request per action, one in AuthZEN's shape, and some from the directory; each reads", () => {
    const examples = examplesFor(TEAM, served([TEAM]).directory);
    expect(examples.map((e) => e.label)).toEqual([
      'user read document',
      'user write document',
      'user read document (AuthZEN shape)',
      'bob read example-1 (from the directory)',
    ]);
    for (const e of examples) expect(readRequest(e.text).ok).toBe(true);
    expect(examplesFor(TEAM, EMPTY_DIRECTORY)).toHaveLength(3);
  });

  it('lists the bundles built with the rule, and whether their entityTypes take a request', () => {
    const carrying = bundlesCarrying(served([TEAM]), 'team-documents');
    expect(carrying.map((b) => b.name)).toEqual(['docs']);
    const docs = carrying[0] as BundleEntry;
    expect(bundleAdmits(docs, input(request()))).toBe(true);
    expect(bundleAdmits(docs, input(request({ resource: { type: 'folder', id: 'f' } })))).toBe(false);
    expect(bundleAdmits(bundle('all', []), input(request({ resource: { type: 'folder', id: 'f' } })))).toBe(true);
  });
});

/**
 * A fake opa whose `eval` answers allow once the file named by its first input's context.release
 * exists; it gives up after 30 s, so a failing test leaves no process behind.
 */
const HELD_OPA = `#!${process.execPath}
const { existsSync } = require('node:fs');
setTimeout(() => process.exit(1), 30000).unref();
let text = '';
process.stdin.on('data', (c) => { text += c; });
process.stdin.on('end', () => {
  const inputs = JSON.parse(text);
  const wait = setInterval(() => {
    if (!existsSync(inputs[0].context.release)) return;
    clearInterval(wait);
    process.stdout.write(JSON.stringify({ result: [{ expressions: [{ value: inputs.map(() => true) }] }] }));
  }, 5);
});
`;

describe('runOpa', () => {
  it('runs at most two playground requests through OPA at once, and says so to a third', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'acl-playground-'));
    try {
      const binary = join(tmp, 'opa');
      await writeFile(binary, HELD_OPA);
      await chmod(binary, 0o755);
      const release = join(tmp, 'release');
      const held = input(request({ context: { release } }));
      const bundles = [bundle('docs', [TEAM], ['document'])];
      const opa = { binary, version: '9.9.9-fake' };
      const first = runOpa(opa, bundles, held);
      const second = runOpa(opa, bundles, held);
      expect(await runOpa(opa, bundles, held)).toBeUndefined();
      await writeFile(release, '');
      const rows = [await first, await second];
      expect(rows).toEqual([
        [{ bundle: 'docs', revision: 3, outcome: { allow: true }, admitted: true }],
        [{ bundle: 'docs', revision: 3, outcome: { allow: true }, admitted: true }],
      ]);
      // Both done: a new run goes through (and reports OPA's failure on this empty archive as an error row).
      const after = await runOpa({ binary: join(tmp, 'missing'), version: '0' }, bundles, held);
      expect(after?.[0]?.outcome).toMatchObject({ error: expect.stringContaining('OPA 0 failed on bundle acme/docs') });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
