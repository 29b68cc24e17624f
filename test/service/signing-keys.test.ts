// Standalone's signing keys as serve keeps them (docs/opa.md#signed-bundles): a key made at the first
// start in <state-dir>/signing/, OPA configurations pinned to it with its public key, a rotation
// picked up while serving (both keys in every configuration, pinned to the new one), a broken key file
// refused once while the last good keys keep signing, and the previous key retired once the agents
// have all moved. test/opa/rotation.test.ts runs the same story with real OPAs.
import { chmod, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { generateSigningKeyPem, KeyProblem, readSigningKey } from '../../src/signing/index.ts';
import { opaConfigFile, publicKeyFile, rotateSigningKey, signingKeyFiles } from '../../src/standalone/index.ts';
import { statusReport } from '../support/reports.ts';
import {
  API_KEY,
  BASE_MANIFESTS,
  startTestService,
  testSigningKeyPem,
  type TestService,
  type TestServiceOptions,
} from '../support/service.ts';

interface OpaConfigDoc {
  labels?: Record<string, string>;
  bundles: Record<string, { resource: string; signing?: { keyid: string } }>;
  keys?: Record<string, { algorithm: string; key: string }>;
}

let t: TestService | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const NEW_KEY = readSigningKey(generateSigningKeyPem(2048));
const newKeyPem = (): string => NEW_KEY.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const FIRST_KID = readSigningKey(testSigningKeyPem()).kid;

async function opaConfig(service: TestService, bundle = 'docs'): Promise<OpaConfigDoc> {
  return parse(await readFile(opaConfigFile(service.stateDir, 'acme', bundle), 'utf8')) as OpaConfigDoc;
}

/** Polls `ok` until it holds (30 s at most, for a loaded machine): a condition, never a fixed wait. */
async function until(ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const ringKids = (service: TestService): (string | undefined)[] => {
  const s = service.service.signing.get();
  return s.unsigned ? ['unsigned'] : [s.ring?.current.kid, s.ring?.previous?.kid];
};

/** A service whose clock the test moves, and whose log lines it reads. */
async function start(
  options: TestServiceOptions = {},
): Promise<{ service: TestService; lines: Record<string, unknown>[]; clock: { ms: number } }> {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    }),
  );
  const clock = { ms: Date.parse('2026-11-28T08:00:00Z') };
  t = await startTestService({
    ...options,
    config: { agentExpirySeconds: 60, ...options.config },
    serviceOptions: { log, now: () => new Date(clock.ms), signingPollMs: 3_600_000, agentStatusIntervalMs: 0, ...options.serviceOptions },
  });
  return { service: t, lines, clock };
}

describe('the signing keys of standalone serve', () => {
  it('makes a key at the first start, pins every OPA configuration to it with its public key, and keeps it across a restart', async () => {
    const { service } = await start();
    const files = signingKeyFiles(service.stateDir);
    expect((await stat(files.current)).mode & 0o777).toBe(0o600);
    expect((await stat(files.dir)).mode & 0o777).toBe(0o700);
    expect(ringKids(service)).toEqual([FIRST_KID, undefined]);
    for (const bundle of ['docs', 'internal']) {
      const config = await opaConfig(service, bundle);
      expect(config.labels).toEqual({ 'acl-signing-key': FIRST_KID });
      expect(config.bundles[bundle]).toMatchObject({ resource: `bundles/${bundle}?key=${FIRST_KID}`, signing: { keyid: FIRST_KID } });
      expect(Object.keys(config.keys ?? {})).toEqual([FIRST_KID]);
      expect(config.keys?.[FIRST_KID]?.key).toBe(readSigningKey(testSigningKeyPem()).publicKeyPem);
    }
    expect(await readdir(join(service.stateDir, 'opa', 'keys'))).toEqual([`${FIRST_KID}.pem`]);
    expect(await readFile(publicKeyFile(service.stateDir, FIRST_KID), 'utf8')).toContain('BEGIN PUBLIC KEY');
    // A later start, given another key maker, reads the key made first and never makes a new one.
    await service.service.stop();
    t = await startTestService({
      dirs: { manifests: service.manifests, stateDir: service.stateDir },
      root: join(service.stateDir, '..'),
      serviceOptions: { newSigningKeyPem: newKeyPem },
    });
    expect(ringKids(t)).toEqual([FIRST_KID, undefined]);
  });

  it('follows a rotation made while serving: every configuration pinned to the new key and holding both, the old public key kept', async () => {
    const { service, lines } = await start();
    const rotation = await rotateSigningKey(service.stateDir, newKeyPem);
    expect(rotation.ok).toBe(true);
    await service.service.checkSigningKeys();
    expect(ringKids(service)).toEqual([NEW_KEY.kid, FIRST_KID]);
    // The configurations are rewritten as the keys change (asynchronously, like at a bundle change).
    await until(async () => (await opaConfig(service)).labels?.['acl-signing-key'] === NEW_KEY.kid);
    const config = await opaConfig(service);
    expect(config.labels).toEqual({ 'acl-signing-key': NEW_KEY.kid });
    expect(config.bundles['docs']).toMatchObject({ resource: `bundles/docs?key=${NEW_KEY.kid}`, signing: { keyid: NEW_KEY.kid } });
    expect(Object.keys(config.keys ?? {})).toEqual([NEW_KEY.kid, FIRST_KID]);
    expect((await readdir(join(service.stateDir, 'opa', 'keys'))).sort()).toEqual([`${FIRST_KID}.pem`, `${NEW_KEY.kid}.pem`].sort());
    expect(lines.filter((l) => l['msg'] === 'Read the bundle signing keys').map((l) => [l['kid'], l['previous']])).toEqual([
      [FIRST_KID, undefined],
      [NEW_KEY.kid, FIRST_KID],
    ]);
    // No log line holds a private key.
    expect(JSON.stringify(lines)).not.toContain('PRIVATE KEY');
  });

  it('shows neither private key anywhere while two keys sign: metrics, agents, status, archives, configurations, logs', async () => {
    const { service, lines } = await start();
    await rotateSigningKey(service.stateDir, newKeyPem);
    await service.service.checkSigningKeys();
    await until(async () => (await opaConfig(service)).labels?.['acl-signing-key'] === NEW_KEY.kid);
    // A line from the middle of each private key's base64: no surface may hold any of it.
    const secrets = [testSigningKeyPem(), newKeyPem()].map((pem) => pem.split('\n')[5] ?? '');
    expect(secrets.every((line) => line.length === 64)).toBe(true);
    const token = await service.token('acme', 'gateways');
    const texts: string[] = [JSON.stringify(lines)];
    for (const key of ['', `?key=${NEW_KEY.kid}`, `?key=${FIRST_KID}`]) {
      const archive = await service.bundle('acme', 'gateways', `docs${key}`, { Authorization: `Bearer ${token}` });
      expect(archive.status).toBe(200);
      texts.push(gunzipSync(Buffer.from(await archive.arrayBuffer())).toString('latin1'));
    }
    texts.push(await (await service.ops('/metrics')).text());
    const agents = await service.api('/acme/connectors/policyagent/gateways/bundles/docs/agents', {
      headers: { Authorization: `Bearer ${API_KEY}` },
    });
    expect(agents.status).toBe(200);
    texts.push(await agents.text());
    texts.push(JSON.stringify(service.service.signing.get().unsigned ? {} : { kids: ringKids(service) }));
    for (const bundle of ['docs', 'internal']) texts.push(await readFile(opaConfigFile(service.stateDir, 'acme', bundle), 'utf8'));
    for (const file of await readdir(join(service.stateDir, 'opa', 'keys')))
      texts.push(await readFile(join(service.stateDir, 'opa', 'keys', file), 'utf8'));
    for (const text of texts) {
      expect(text).not.toContain('PRIVATE KEY');
      for (const line of secrets) expect(text).not.toContain(line);
    }
  });

  it('refuses a key file broken while serving once, in the log, and keeps signing with the last good keys', async () => {
    const { service, lines } = await start();
    const files = signingKeyFiles(service.stateDir);
    const before = await opaConfig(service);
    for (let i = 0; i < 10; i++) {
      await writeFile(files.current, `not a key ${i % 2}`);
      await service.service.checkSigningKeys();
    }
    await chmod(files.current, 0o600);
    await service.service.checkSigningKeys();
    const state = service.service.signing.get();
    expect(state.unsigned === false && state.problem).toMatch(/current\.pem is not a PEM private key/);
    expect(ringKids(service)).toEqual([FIRST_KID, undefined]);
    expect(await opaConfig(service)).toEqual(before);
    expect(lines.filter((l) => l['msg'] === 'Refused a signing key file; the last good keys keep signing')).toHaveLength(1);
    // Put back, it signs again and the problem is gone.
    await writeFile(files.current, testSigningKeyPem(), { mode: 0o600 });
    await service.service.checkSigningKeys();
    expect(service.service.signing.get()).toMatchObject({ unsigned: false, problem: undefined });
  });

  it('starts with a broken previous.pem signing with the current key alone, and keeps it when current.pem breaks later', async () => {
    const first = await startTestService({ manifests: BASE_MANIFESTS });
    const dirs = { manifests: first.manifests, stateDir: first.stateDir };
    await first.service.stop();
    const files = signingKeyFiles(dirs.stateDir);
    await writeFile(files.previous, 'garbage', { mode: 0o600 });
    const { service } = await start({ dirs, root: join(dirs.stateDir, '..') });
    expect(ringKids(service)).toEqual([FIRST_KID, undefined]);
    expect(service.service.signing.get()).toMatchObject({ problem: expect.stringMatching(/previous\.pem is not a PEM private key/) });
    for (let i = 0; i < 5; i++) {
      await writeFile(files.current, `broken ${i}`);
      await service.service.checkSigningKeys();
      expect(ringKids(service)).toEqual([FIRST_KID, undefined]);
    }
    expect(service.service.signing.get()).toMatchObject({ problem: expect.stringMatching(/current\.pem is not a PEM private key/) });
  });

  it('retires previous.pem only after a whole agent window, not while an agent does not report the new key, and once every agent does', async () => {
    const { service, clock } = await start();
    const files = signingKeyFiles(service.stateDir);
    await rotateSigningKey(service.stateDir, newKeyPem);
    await service.service.checkSigningKeys();
    // An OPA configured before the rotation (no acl-signing-key label of the new key) reports.
    const token = await service.token('acme', 'gateways');
    const post = (body: unknown): Promise<Response> =>
      service.api('/acme/connectors/policyagent/gateways/status', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
    expect((await post(statusReport('opa-old', { docs: { revision: '1' } }))).status).toBe(200);
    // And one started from the rewritten configuration, verifying with the new key.
    const onNewKey = (): Record<string, unknown> => {
      const r = statusReport('opa-new', { docs: { revision: '2' } });
      return { ...r, labels: { ...(r['labels'] as object), 'acl-signing-key': NEW_KEY.kid } };
    };
    expect((await post(onNewKey())).status).toBe(200);
    clock.ms += 30_000;
    await service.service.checkSigningKeys();
    expect(ringKids(service)).toEqual([NEW_KEY.kid, FIRST_KID]);
    expect((await post(statusReport('opa-old', { docs: { revision: '1' } }))).status).toBe(200);
    expect((await post(onNewKey())).status).toBe(200);
    clock.ms += 31_000;
    // A whole window has passed, but the old OPA is still heard from: the previous key stays.
    await service.service.checkSigningKeys();
    expect(ringKids(service)).toEqual([NEW_KEY.kid, FIRST_KID]);
    // It stops (its last report says so): the one agent left verifies with the new key.
    expect((await post(statusReport('opa-old', { docs: { revision: '1', stopping: true } }))).status).toBe(200);
    await service.service.checkSigningKeys();
    expect(ringKids(service)).toEqual([NEW_KEY.kid, undefined]);
    await expect(stat(files.previous)).rejects.toThrow(/ENOENT/);
    // The writer rewrites the configurations first and removes the old public key file after them.
    await until(
      async () =>
        Object.keys((await opaConfig(service)).keys ?? {}).join() === NEW_KEY.kid &&
        (await readdir(join(service.stateDir, 'opa', 'keys'))).join() === `${NEW_KEY.kid}.pem`,
    );
  });

  it('makes no key and prints configurations without signing with --unsigned-bundles', async () => {
    const { service } = await start({ config: { unsignedBundles: true } });
    expect(ringKids(service)).toEqual(['unsigned']);
    await expect(stat(signingKeyFiles(service.stateDir).current)).rejects.toThrow(/ENOENT/);
    const config = await opaConfig(service);
    expect(config.keys).toBeUndefined();
    expect(config.bundles['docs']).toEqual(expect.not.objectContaining({ signing: expect.anything() }));
    expect(config.bundles['docs']?.resource).toBe('bundles/docs');
  });

  it('refuses to start without a good key, naming the file and what to do', async () => {
    const first = await startTestService({ manifests: BASE_MANIFESTS });
    const dirs = { manifests: first.manifests, stateDir: first.stateDir };
    await first.service.stop();
    await writeFile(signingKeyFiles(dirs.stateDir).current, 'garbage');
    const failed = startTestService({ dirs });
    await expect(failed).rejects.toThrow(KeyProblem);
    await expect(failed).rejects.toThrow(/cannot sign bundles: .*signing\/current\.pem is not a PEM private key.*--unsigned-bundles/);
    await rm(join(dirs.stateDir, '..'), { recursive: true, force: true });
  });
});
