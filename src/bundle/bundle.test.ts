import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { buildBundle, canonicalJson, selectRules, type BundleInput } from './index.ts';
import { ruleModelFor } from '../../test/support/rules.ts';

/** Lists a tar archive: name, size, mode, mtime, uid, gid of each entry, read straight from the headers. */
function listTar(
  tar: Uint8Array,
): { name: string; size: number; mode: number; mtime: number; uid: number; gid: number; content: string }[] {
  const out = [];
  const buf = Buffer.from(tar);
  for (let off = 0; off + 512 <= buf.length; ) {
    const header = buf.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start: number, len: number) =>
      header
        .subarray(start, start + len)
        .toString('latin1')
        .replace(/\0.*$/s, '')
        .trim();
    const size = parseInt(field(124, 12), 8);
    out.push({
      name: field(0, 100),
      size,
      mode: parseInt(field(100, 8), 8),
      uid: parseInt(field(108, 8), 8),
      gid: parseInt(field(116, 8), 8),
      mtime: parseInt(field(136, 12), 8),
      content: buf.subarray(off + 512, off + 512 + size).toString('utf8'),
    });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

const rules = [
  ruleModelFor('team-documents', { condition: 'principal.team == resource.team' }),
  ruleModelFor('records-read', { resourceType: 'record' }),
  ruleModelFor('groups-datasets', { subjectType: 'group', resourceType: 'dataset' }),
  ruleModelFor('drafty', { state: 'Draft' }),
  ruleModelFor('other-tenant', { namespace: 'globex' }),
];
const input = (over: Partial<BundleInput> = {}): BundleInput => ({
  tenant: 'acme',
  name: 'gateway-policies',
  connector: 'gateways',
  regoVersion: 0,
  rules: selectRules('acme', rules, {}),
  ...over,
});

describe('selectRules', () => {
  it('keeps Enforced rules of the tenant only', () => {
    expect(selectRules('acme', rules, {}).map((r) => r.name)).toEqual(['team-documents', 'records-read', 'groups-datasets']);
  });

  it('filters by entity type on subject or resource type, and an empty filter means all', () => {
    expect(selectRules('acme', rules, { entityTypes: ['record', 'group'] }).map((r) => r.name)).toEqual([
      'records-read',
      'groups-datasets',
    ]);
    expect(selectRules('acme', rules, { entityTypes: [] })).toHaveLength(3);
  });
});

describe('buildBundle', () => {
  it('packs exactly .manifest then policy.rego with fixed mtime, mode and owner', async () => {
    const b = await buildBundle(input(), 7);
    const entries = listTar(gunzipSync(b.bytes));
    expect(entries.map(({ name, mode, mtime, uid, gid }) => ({ name, mode, mtime, uid, gid }))).toEqual([
      { name: '.manifest', mode: 0o644, mtime: 0, uid: 0, gid: 0 },
      { name: 'policy.rego', mode: 0o644, mtime: 0, uid: 0, gid: 0 },
    ]);
    expect(JSON.parse(entries[0]!.content)).toEqual({
      revision: '7',
      roots: ['acl'],
      rego_version: 0,
      metadata: { bundle: 'gateway-policies', connector: 'gateways', rules: 3, tenant: 'acme' },
    });
    expect(entries[1]!.content).toBe(b.rego);
    expect(b.rego).toContain('package acl');
    expect(b.rego).not.toContain('drafty');
    expect(b.rego).not.toContain('other-tenant');
  });

  it('writes no gzip timestamp and a fixed OS byte', async () => {
    const { bytes } = await buildBundle(input(), 1);
    expect([...bytes.subarray(0, 4)]).toEqual([0x1f, 0x8b, 8, 0]);
    expect([...bytes.subarray(4, 8)]).toEqual([0, 0, 0, 0]);
    expect(bytes[9]).toBe(3);
  });

  it('gives the same bytes, digest and ETag for the same inputs, whatever the rule order', async () => {
    const a = await buildBundle(input(), 3);
    const b = await buildBundle(input({ rules: [...input().rules].reverse() }), 3);
    expect(Buffer.from(b.bytes).equals(Buffer.from(a.bytes))).toBe(true);
    expect(b.etag).toBe(a.etag);
    expect(a.etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(a.digest).toBe(`sha256:${a.etag.slice(1, -1)}`);
  });

  it('gives the same bytes in another process', async () => {
    const script = join(import.meta.dirname, '..', '..', 'test', 'support', 'print-bundle-digest.ts');
    const here = await buildBundle(input(), 3);
    const there = execFileSync(process.execPath, [script], { encoding: 'utf8' }).trim();
    expect(there).toBe(here.digest);
  });

  it('changes the bytes with the revision but not the input digest', async () => {
    const a = await buildBundle(input(), 3);
    const b = await buildBundle(input(), 4);
    expect(b.etag).not.toBe(a.etag);
    expect(b.inputDigest).toBe(a.inputDigest);
  });

  it('changes the input digest when a rule, the rego version, the connector or entityTypes changes', async () => {
    const base = (await buildBundle(input(), 1)).inputDigest;
    const changed = [
      input({ rules: input().rules.slice(1) }),
      input({ regoVersion: 1 }),
      input({ connector: 'other' }),
      input({ entityTypes: ['document'] }),
      input({ rules: [ruleModelFor('team-documents', { condition: 'principal.team != resource.team' }), ...input().rules.slice(1)] }),
    ];
    for (const c of changed) expect((await buildBundle(c, 1)).inputDigest).not.toBe(base);
  });

  it('records entityTypes sorted in the manifest, and treats an empty list as none', async () => {
    const b = await buildBundle(input({ entityTypes: ['user', 'document', 'user'] }), 1);
    expect(JSON.parse(b.manifest).metadata.entityTypes).toEqual(['document', 'user']);
    expect((await buildBundle(input({ entityTypes: [] }), 1)).digest).toBe((await buildBundle(input(), 1)).digest);
  });

  it('writes rego_version 1 and v1 syntax for regoVersion 1', async () => {
    const b = await buildBundle(input({ regoVersion: 1 }), 1);
    expect(JSON.parse(b.manifest).rego_version).toBe(1);
    expect(b.rego).toContain('import rego.v1');
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[2,{"y":2,"z":1}]},"b":1}');
  });
});
