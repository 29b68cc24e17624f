import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  activeChanges,
  type EditOutcome,
  type FieldChange,
  type ObjectKey,
  regenerateChanges,
  revokeChanges,
  rotateChanges,
} from '../controller/index.ts';
import { createReadingThread } from './reading.ts';
import type { ManifestOrigin } from './edit.ts';
import { createManifestEditor } from './index.ts';
import { createThreadReader, DEFAULT_MANIFEST_LIMITS } from './reader.ts';
import { createFolderSource } from './source.ts';
import { openStateFolder } from './state.ts';

const AT = '2026-05-01T10:00:00.000Z';
const GW: ObjectKey = { kind: 'Connector', namespace: 'acme', name: 'gateway' };
const RULE: ObjectKey = { kind: 'Rule', namespace: 'acme', name: 'team' };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'acl-edit-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `files`, then edits `key` in the file and document `origin` names; answers the outcome and the file's new text. */
async function editIn(
  files: Record<string, string>,
  key: ObjectKey,
  changes: readonly FieldChange[],
  origin: ManifestOrigin | null = { source: Object.keys(files)[0] as string, document: 1 },
): Promise<{ outcome: EditOutcome; text: string }> {
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  const editor = createManifestEditor({ dir, objects: { origin: () => origin ?? undefined } });
  const outcome = await editor.edit(key, changes);
  return { outcome, text: origin ? await readFile(join(dir, origin.source), 'utf8').catch(() => '') : '' };
}

const CONNECTOR = `# The gateways' connector: its token is mounted by the OPA sidecars.
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata:
  name: gateway   # the id in the bundle URL
  namespace: acme

  labels: {team: "edge"}
spec:
  displayName: 'Edge gateways'
  # Turned off during the migration.
  active: true
  tokenRotation: 4
`;

describe('editing a manifest for a console action', () => {
  it('changes only the changed line: comments, key order, quoting and blank lines stay byte for byte', async () => {
    const { outcome, text } = await editIn({ 'gw.yaml': CONNECTOR }, GW, activeChanges(false));
    expect(outcome).toEqual({ ok: true, where: `${join(dir, 'gw.yaml')}, document 1` });
    expect(text).toBe(CONNECTOR.replace('  active: true\n', '  active: false\n'));
  });

  it('adds a missing field at the end of its mapping, in the mapping own indentation', async () => {
    const four = CONNECTOR.replaceAll('\n  ', '\n    ');
    const { text } = await editIn({ 'gw.yaml': four }, GW, revokeChanges());
    expect(text).toBe(`${four}    revoked: true\n`);
  });

  it('reads a file that starts with a byte order mark in the columns a person sees', async () => {
    const bom = '\uFEFFapiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata:\n    name: gateway\n    namespace: acme\n';
    const spec = await editIn({ 'gw.yaml': bom }, GW, activeChanges(false));
    expect(spec.outcome.ok).toBe(true);
    expect(spec.text).toBe(`${bom}spec:\n    active: false\n`);
    const annotated = await editIn({ 'gw.yaml': bom }, GW, regenerateChanges(AT));
    expect(annotated.text).toBe(`${bom}    annotations:\n        acl.policyagent.dev/regenerate: "${AT}"\n`);
  });

  it('creates the annotations map when metadata has none, and only adds lines', async () => {
    const { text } = await editIn({ 'gw.yaml': CONNECTOR }, GW, regenerateChanges(AT));
    expect(text).toBe(
      CONNECTOR.replace(
        '  labels: {team: "edge"}\n',
        `  labels: {team: "edge"}\n  annotations:\n    acl.policyagent.dev/regenerate: "${AT}"\n`,
      ),
    );
  });

  it('edits one document of a multi-document file and leaves the others byte for byte', async () => {
    const rule = `---
# Team rule.
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata:
  name: team
  namespace: acme
  annotations:
    owner: docs-team
    acl.policyagent.dev/regenerate: "2026-01-01"
spec: {state: Enforced, subjectType: user, actions: [read], resourceType: document}
`;
    const bundle = `---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: {name: docs, namespace: acme}
spec: {connector: gateway}
`;
    const file = CONNECTOR + rule + bundle;
    const first = await editIn({ 'all.yaml': file }, RULE, regenerateChanges(AT), { source: 'all.yaml', document: 2 });
    expect(first.outcome).toEqual({ ok: true, where: `${join(dir, 'all.yaml')}, document 2` });
    expect(first.text).toBe(CONNECTOR + rule.replace('"2026-01-01"', `"${AT}"`) + bundle);
    const second = await editIn(
      {},
      GW,
      rotateChanges({ kind: 'Connector', metadata: { name: 'gateway', namespace: 'acme' }, raw: { spec: { tokenRotation: 4 } } }),
      {
        source: 'all.yaml',
        document: 1,
      },
    );
    expect(second.text).toBe(CONNECTOR.replace('tokenRotation: 4', 'tokenRotation: 5') + rule.replace('"2026-01-01"', `"${AT}"`) + bundle);
  });

  it('writes into flow mappings in flow style', async () => {
    const flow = `apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: {name: gateway, namespace: acme}  # flow
spec: {active: true, tokenRotation: 1}
`;
    const rotated = await editIn({ 'gw.yaml': flow }, GW, [
      ...rotateChanges({ kind: 'Connector', metadata: { name: 'gateway', namespace: 'acme' }, raw: { spec: { tokenRotation: 1 } } }),
      ...revokeChanges(),
    ]);
    expect(rotated.text).toBe(
      flow.replace('spec: {active: true, tokenRotation: 1}', 'spec: {active: true, tokenRotation: 2, revoked: true}'),
    );
    const annotated = await editIn({}, GW, regenerateChanges(AT), { source: 'gw.yaml', document: 1 });
    expect(annotated.text).toBe(
      rotated.text.replace('namespace: acme}', `namespace: acme, annotations: {acl.policyagent.dev/regenerate: "${AT}"}}`),
    );
    const spaced = await editIn(
      { 's.yaml': flow.replace('{name: gateway, namespace: acme}', '{ name: gateway, namespace: acme }') },
      GW,
      regenerateChanges(AT),
    );
    expect(spaced.text).toContain(
      `metadata: { name: gateway, namespace: acme, annotations: { acl.policyagent.dev/regenerate: "${AT}" } }  # flow\n`,
    );
    const empty = await editIn({ 'e.yaml': flow.replace('spec: {active: true, tokenRotation: 1}', 'spec: {}') }, GW, activeChanges(false));
    expect(empty.text).toContain('spec: {active: false}\n');
  });

  it('fills an empty spec', async () => {
    const bare = 'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata:\n  name: gateway\n  namespace: acme\nspec:\n';
    const { text } = await editIn({ 'gw.yaml': bare }, GW, activeChanges(false));
    expect(text).toBe(`${bare.slice(0, -1)}\n  active: false\n`);
  });

  it('fills an empty spec that carries a comment, leaving the comment on its line', async () => {
    const bare =
      'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata: {name: gateway, namespace: acme}\nspec: # set by the console\n';
    const { text } = await editIn({ 'gw.yaml': bare }, GW, activeChanges(false));
    expect(text).toBe(`${bare}  active: false\n`);
  });

  it('keeps quoted keys and the quoting of the value it replaces', async () => {
    const quoted = `apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata:
  name: "gateway"
  namespace: 'acme'
  annotations: {'acl.policyagent.dev/regenerate': 'before'}
spec:
  "active": true
  'tokenRotation': 1
`;
    const { text } = await editIn({ 'gw.yaml': quoted }, GW, [...activeChanges(false), ...regenerateChanges(AT)]);
    expect(text).toBe(quoted.replace('"active": true', '"active": false').replace("'before'", `'${AT}'`));
  });

  it('keeps CRLF line endings, in the changed lines and the added ones', async () => {
    const crlf = CONNECTOR.replaceAll('\n', '\r\n');
    const { text } = await editIn({ 'gw.yaml': crlf }, GW, [...activeChanges(false), ...revokeChanges()]);
    expect(text).toBe(`${crlf.replace('active: true', 'active: false')}  revoked: true\r\n`);
    expect(text.replaceAll('\r\n', '')).not.toContain('\n');
  });

  it('keeps the file mode and leaves no temporary file behind', async () => {
    await writeFile(join(dir, 'gw.yaml'), CONNECTOR);
    await chmod(join(dir, 'gw.yaml'), 0o600);
    const { outcome } = await editIn({}, GW, activeChanges(false), { source: 'gw.yaml', document: 1 });
    expect(outcome.ok).toBe(true);
    expect((await stat(join(dir, 'gw.yaml'))).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual(['gw.yaml']);
  });

  it('lets two edits of one file at once both land', async () => {
    await writeFile(join(dir, 'gw.yaml'), CONNECTOR);
    const editor = createManifestEditor({ dir, objects: { origin: () => ({ source: 'gw.yaml', document: 1 }) } });
    const outcomes = await Promise.all([editor.edit(GW, activeChanges(false)), editor.edit(GW, revokeChanges())]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, true]);
    expect(await readFile(join(dir, 'gw.yaml'), 'utf8')).toBe(`${CONNECTOR.replace('active: true', 'active: false')}  revoked: true\n`);
  });
});

describe('a manifest the editor will not touch', () => {
  it('finds the object where it moved in a file changed under us, and says so when the file no longer holds it', async () => {
    const other = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n';
    const moved = await editIn({ 'gw.yaml': CONNECTOR }, GW, activeChanges(false), { source: 'gw.yaml', document: 2 });
    expect(moved.outcome).toEqual({ ok: true, where: `${join(dir, 'gw.yaml')}, document 1` });
    const gone = await editIn({ 'gw.yaml': other + CONNECTOR.replace('name: gateway', 'name: other') }, GW, activeChanges(false));
    expect(gone.outcome).toEqual({
      ok: false,
      status: 409,
      message: `${join(dir, 'gw.yaml')} no longer holds Connector acme/gateway: the file changed since it was read.`,
    });
    await rm(join(dir, 'gw.yaml'));
    const deleted = await editIn({}, GW, activeChanges(false), { source: 'gw.yaml', document: 1 });
    expect(deleted.outcome).toEqual({
      ok: false,
      status: 409,
      message: `${join(dir, 'gw.yaml')} no longer exists: the folder changed since it was read.`,
    });
  });

  it('refuses anchors and aliases on the path of the edit, and leaves the file as it was', async () => {
    const anchored = CONNECTOR.replace('spec:\n', 'spec: &spec\n');
    const a = await editIn({ 'gw.yaml': anchored }, GW, activeChanges(false));
    expect(a.outcome).toEqual({
      ok: false,
      status: 422,
      message: `${join(dir, 'gw.yaml')}, document 1: cannot set spec.active: spec carries an anchor (&spec) that aliases elsewhere repeat`,
    });
    expect(a.text).toBe(anchored);
    const aliased = CONNECTOR.replace('  labels: {team: "edge"}\n', '  labels: &on {team: "edge"}\n').replace(
      'active: true',
      'active: *on',
    );
    const b = await editIn({ 'gw.yaml': aliased }, GW, activeChanges(false));
    expect(b.outcome).toMatchObject({ ok: false, status: 422, message: expect.stringContaining('spec.active is an alias (*on)') });
  });

  it('refuses a file with YAML errors, naming line and column', async () => {
    const broken = `${CONNECTOR}---\nkind: Rule\nmetadata: [\n`;
    const { outcome, text } = await editIn({ 'gw.yaml': broken }, GW, activeChanges(false));
    expect(outcome).toMatchObject({ ok: false, status: 422 });
    expect(outcome.ok ? '' : outcome.message).toMatch(
      new RegExp(`^${join(dir, 'gw.yaml')} has YAML errors \\(line \\d+, column \\d+: .+\\); fix the file first\\.$`),
    );
    expect(text).toBe(broken);
  });

  it('refuses an object held from the state folder, and one the folder does not hold', async () => {
    const held = await editIn({ 'gw.yaml': CONNECTOR }, GW, activeChanges(false), { source: 'gw.yaml', document: 0 });
    expect(held.outcome).toEqual({
      ok: false,
      status: 409,
      message: `Connector acme/gateway is held from the state folder, not read from a manifest: ${join(dir, 'gw.yaml')} could not be read at the last scan. The manifests folder is the source of truth; fix the file, then try again.`,
    });
    expect(held.text).toBe(CONNECTOR);
    const missing = await editIn({}, GW, activeChanges(false), null);
    expect(missing.outcome).toEqual({ ok: false, status: 404, message: `Connector acme/gateway is not in the manifests folder ${dir}.` });
  });

  it('writes nothing when the edited text would not read back as asked', async () => {
    // A flow mapping's empty value followed by a comment: the planned text would break the YAML.
    const odd = `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata: {name: gateway, namespace: acme, annotations: # none\n}\n`;
    const { outcome, text } = await editIn({ 'gw.yaml': odd }, GW, regenerateChanges(AT));
    expect(outcome).toEqual({
      ok: false,
      status: 422,
      message: `${join(dir, 'gw.yaml')}, document 1 cannot be edited safely (the edit would break the YAML); make the change by hand.`,
    });
    expect(text).toBe(odd);
  });

  it('refuses a file that leads outside the manifests folder', async () => {
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(join(dir, 'outside.yaml'), CONNECTOR);
    const editor = createManifestEditor({ dir: manifests, objects: { origin: () => ({ source: '../outside.yaml', document: 1 }) } });
    expect(await editor.edit(GW, activeChanges(false))).toMatchObject({ ok: false, status: 422 });
    expect(await readFile(join(dir, 'outside.yaml'), 'utf8')).toBe(CONNECTOR);
  });

  it('refuses a change no action makes, and a value whose place is a list', async () => {
    const bad = await editIn({ 'gw.yaml': CONNECTOR }, GW, [{ path: ['metadata', 'name'], value: 'other' }]);
    expect(bad.outcome).toMatchObject({ ok: false, status: 422 });
    const list = await editIn({ 'gw.yaml': CONNECTOR.replace('active: true', 'active: [true]') }, GW, activeChanges(false));
    expect(list.outcome).toMatchObject({
      ok: false,
      status: 422,
      message: expect.stringContaining('cannot set spec.active: it holds a list'),
    });
  });
});

describe('an edit through the folder source', () => {
  const folderSource = (manifests: string) =>
    createFolderSource({
      dir: manifests,
      state: openStateFolder(join(dir, 'state')),
      log: pino({ level: 'silent' }),
      enqueue: () => undefined,
      reader: createThreadReader(createReadingThread(true), DEFAULT_MANIFEST_LIMITS),
      settleMs: 0,
    });

  it('arrives as the object new spec once the folder is read again', async () => {
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(join(manifests, 'gw.yaml'), `---\n${CONNECTOR}`);
    const source = folderSource(manifests);
    await source.start();
    expect(source.origin(GW)).toEqual({ source: 'gw.yaml', document: 1 });
    const editor = createManifestEditor({ dir: manifests, objects: source });
    expect(await editor.edit(GW, [...activeChanges(false), ...regenerateChanges(AT)])).toEqual({
      ok: true,
      where: `${join(manifests, 'gw.yaml')}, document 1`,
    });
    await source.rescan();
    const after = source.get('Connector', 'acme', 'gateway');
    expect(after?.raw['spec']).toEqual({ displayName: 'Edge gateways', active: false, tokenRotation: 4 });
    expect(after?.metadata.annotations).toEqual({ 'acl.policyagent.dev/regenerate': AT });
    source.stop();
  });

  it('refuses an object the source holds from the state folder because its file no longer reads', async () => {
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(join(manifests, 'gw.yaml'), CONNECTOR);
    const first = folderSource(manifests);
    await first.start();
    first.stop();
    // Broken while the service was down: the restarted source keeps what the state folder remembers.
    await writeFile(join(manifests, 'gw.yaml'), `${CONNECTOR}  broken: [\n`);
    const restarted = folderSource(manifests);
    await restarted.start();
    expect(restarted.origin(GW)).toEqual({ source: 'gw.yaml', document: 0 });
    const outcome = await createManifestEditor({ dir: manifests, objects: restarted }).edit(GW, activeChanges(false));
    expect(outcome).toMatchObject({ ok: false, status: 409, message: expect.stringContaining('is held from the state folder') });
    restarted.stop();
  });
});
