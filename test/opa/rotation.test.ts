// A full key rotation in standalone mode with real OPAs (OPA_BIN; CI runs OPA 1.1 and 0.61), as the
// runbook of docs/opa.md#signed-bundles tells a person to do it: serve signs with key A; OPA-1,
// started from the configuration serve printed (pinned to A), decides; `acl-operator rotate-key`;
// OPA-1 keeps deciding and still gets rule edits (the A-signed twin of each revision); OPA-2, started
// from the rewritten configuration (pinned to B), activates; OPA-1 stops, leaves the fleet, and serve
// deletes signing/previous.pem by itself. Decisions are asked of every running OPA throughout, and
// neither OPA ever logs a verification error.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFailed } from 'vitest';
import { parse } from 'yaml';
import { opaConfigFile, signingKeyFiles } from '../../src/standalone/index.ts';
import { opaJson, opaVersion, opaTestScope, runOpa, SIDECARS, sidecarsManifest, waitForOpa, type RunningOpa } from '../support/opa.ts';
import { BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

const OPA_BIN = process.env['OPA_BIN'];
const CLI = join(import.meta.dirname, '..', '..', 'src', 'cli.ts');
const { tenant: TENANT, bundle: BUNDLE } = SIDECARS;
const RULE = (actions: string): string => `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: team-documents, namespace: ${TENANT} }
spec: { state: Enforced, subjectType: user, actions: [${actions}], resourceType: document, condition: principal.team == resource.team }
`;
const ask = (action: string): Record<string, unknown> => ({
  input: { principal: { type: 'user', id: 'alice', team: 'blue' }, action, resource: { type: 'document', id: 'd1', team: 'blue' } },
});
/** What OPA logs when a bundle does not verify (test/opa/signing.test.ts shows each). */
const VERIFICATION_ERROR = /verif|signature|digest mismatch|\.signatures\.json/i;

const scope = opaTestScope();
const { opas, dirs } = scope;

interface Logged {
  readonly opa: RunningOpa;
  /** Every line OPA wrote (its output() keeps only the tail). */
  readonly lines: string[];
}

/** An OPA started from a copy of the configuration serve wrote now (a sidecar keeps the file it started with). */
async function startOpa(service: TestService): Promise<Logged & { keyid: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'acl-opa-rotation-'));
  dirs.push(dir);
  const text = await readFile(opaConfigFile(service.stateDir, TENANT, BUNDLE), 'utf8');
  const file = join(dir, 'opa.yaml');
  await writeFile(file, text);
  const keyid = (parse(text) as { bundles: Record<string, { signing: { keyid: string } }> }).bundles[BUNDLE]?.signing.keyid ?? '';
  const lines: string[] = [];
  const opa = await runOpa(OPA_BIN as string, file, dir, (l) => lines.push(l));
  opas.push(opa);
  return { opa, lines, keyid };
}

/** Asks each OPA in `targets()` a decision every 25 ms until stopped; every answer that is not a decision is kept. */
function keepAsking(targets: () => readonly RunningOpa[]): { asked: () => number; failures: string[]; stop: () => Promise<void> } {
  const failures: string[] = [];
  let asked = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const opa of targets()) {
        const res = await opaJson(opa, '/v1/data/acl/allow', ask('read')).catch((err: unknown) => ({ status: 0, body: String(err) }));
        asked++;
        if (res.status !== 200 || (res.body as { result?: unknown })?.result !== true)
          failures.push(`${opa.url}: ${res.status} ${JSON.stringify(res.body)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return {
    asked: () => asked,
    failures,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

const decides = async (opa: RunningOpa, action: string): Promise<boolean | undefined> => {
  const res = await opaJson(opa, '/v1/data/acl/allow', ask(action));
  return res.status === 200 ? ((res.body as { result?: boolean }).result ?? undefined) : undefined;
};

/** Polls `probe` (serve's side: no OPA to watch) until it gives a value; fails after 10 s. */
async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after 10 s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const ring = (service: TestService): [string | undefined, string | undefined] => {
  const s = service.service.signing.get();
  return s.unsigned ? [undefined, undefined] : [s.ring?.current.kid, s.ring?.previous?.kid];
};

if (OPA_BIN)
  describe(`a signing key rotation in standalone mode with real OPAs (OPA_BIN=${OPA_BIN})`, () => {
    opaVersion(OPA_BIN);

    it('rotates A → A+B → B with decisions answered throughout and no verification error in any OPA', async () => {
      const startedAt = performance.now();
      scope.service = await startTestService({
        manifests: {
          'connectors.yaml': sidecarsManifest('{}'),
          'rules.yaml': RULE('read'),
          'keys.yaml': BASE_MANIFESTS['keys.yaml'] as string,
        },
        // OPAs re-poll (and report) every second, and are forgotten after 5 s of silence.
        maxLongPollSeconds: 1,
        config: { agentExpirySeconds: 5 },
        // serve follows signing/ by itself, as it does by default every 2 s.
        serviceOptions: { signingPollMs: 100, agentStatusIntervalMs: 0 },
      });
      const service = scope.service;
      const [keyA] = ring(service);
      const one = await startOpa(service);
      const running = [one.opa];
      const two: (Logged & { keyid: string })[] = [];
      onTestFailed(() => {
        for (const o of [one, ...two])
          console.error(`--- OPA at ${o.opa.url}${o.opa.ended() ? ` (${o.opa.ended()})` : ''}:\n${o.lines.slice(-80).join('\n')}`);
      });
      expect(one.keyid).toBe(keyA);
      await waitForOpa(one.opa, 'OPA-1 (pinned to A) to allow a read', 30_000, async () =>
        (await decides(one.opa, 'read')) ? true : undefined,
      );
      const asking = keepAsking(() => running);

      // The person's rotate-key, while serve runs.
      const rotated = await promisify(execFile)(process.execPath, [CLI, 'rotate-key', '--state-dir', service.stateDir]);
      const keyB = /new key {7}(acl-[0-9a-f]{16})/.exec(rotated.stdout)?.[1];
      expect(keyB).toBeDefined();
      await waitForOpa(one.opa, 'serve to sign with B and keep A', 10_000, () =>
        ring(service).join() === `${keyB},${keyA}` ? true : undefined,
      );
      await waitForOpa(one.opa, 'the configuration rewritten, pinned to B', 10_000, async () =>
        (await readFile(opaConfigFile(service.stateDir, TENANT, BUNDLE), 'utf8')).includes(`keyid: ${keyB}`) ? true : undefined,
      );

      // OPA-1 still gets rule edits: the A-signed twin of the new revision.
      await service.write('rules.yaml', RULE('read, write'));
      await waitForOpa(one.opa, 'OPA-1 (pinned to A) to allow a write after the edit', 30_000, async () =>
        (await decides(one.opa, 'write')) ? true : undefined,
      );

      // OPA-2 from the rewritten configuration, pinned to B, activates and decides with the same rules.
      two.push(await startOpa(service));
      const second = two[0] as Logged & { keyid: string };
      expect(second.keyid).toBe(keyB);
      await waitForOpa(second.opa, 'OPA-2 (pinned to B) to allow a write', 30_000, async () =>
        (await decides(second.opa, 'write')) ? true : undefined,
      );
      running.push(second.opa);
      // While OPA-1 (on A) is still heard from, the previous key stays: checked until the agent window
      // (5 s) since serve started has passed, so it is OPA-1 that holds it, not the window.
      for (;;) {
        await service.service.checkSigningKeys();
        expect(ring(service)).toEqual([keyB, keyA]);
        await expect(stat(signingKeyFiles(service.stateDir).previous)).resolves.toBeDefined();
        if (performance.now() - startedAt > 6000) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }

      // OPA-1 stops; once the fleet no longer holds it, serve retires A by itself.
      running.splice(0, 1);
      await one.opa.stop();
      await waitForOpa(second.opa, 'serve to delete signing/previous.pem', 30_000, async () =>
        (await stat(signingKeyFiles(service.stateDir).previous).catch(() => undefined)) === undefined ? true : undefined,
      );
      await waitForOpa(second.opa, 'serve to sign with B alone', 10_000, () => (ring(service).join() === `${keyB},` ? true : undefined));
      // OPA-2 keeps deciding, and a later edit still reaches it.
      await service.write('rules.yaml', RULE('read, write, share'));
      await waitForOpa(second.opa, 'OPA-2 to allow a share after the retirement', 30_000, async () =>
        (await decides(second.opa, 'share')) ? true : undefined,
      );

      await asking.stop();
      expect(asking.asked()).toBeGreaterThan(10);
      expect(asking.failures).toEqual([]);
      for (const o of [one, second]) expect(o.lines.filter((l) => VERIFICATION_ERROR.test(l))).toEqual([]);
      expect(await readFile(opaConfigFile(service.stateDir, TENANT, BUNDLE), 'utf8')).not.toContain(keyA);
    }, 180_000);

    it('restarts an OPA with the rewritten configuration in its own folder: the bundle it persisted under A is refused from disk, and B is active at once', async () => {
      scope.service = await startTestService({
        manifests: {
          'connectors.yaml': sidecarsManifest('{}'),
          'rules.yaml': RULE('read'),
          'keys.yaml': BASE_MANIFESTS['keys.yaml'] as string,
        },
        serviceOptions: { signingPollMs: 100 },
      });
      const service = scope.service;
      const [keyA] = ring(service);
      const first = await startOpa(service);
      await waitForOpa(first.opa, 'OPA (pinned to A) to allow a read', 30_000, async () =>
        (await decides(first.opa, 'read')) ? true : undefined,
      );
      await first.opa.stop();
      await promisify(execFile)(process.execPath, [CLI, 'rotate-key', '--state-dir', service.stateDir]);
      const [keyB] = await until('serve to sign with B and keep A', () => (ring(service)[1] === keyA ? ring(service) : undefined));
      // The same OPA, in the same folder (its persisted bundle, signed by A), with the rewritten configuration.
      await until('the configuration pinned to B', async () =>
        (await readFile(opaConfigFile(service.stateDir, TENANT, BUNDLE), 'utf8')).includes(`keyid: ${keyB}`) ? true : undefined,
      );
      const dir = dirs.at(-1) as string;
      await writeFile(join(dir, 'opa.yaml'), await readFile(opaConfigFile(service.stateDir, TENANT, BUNDLE), 'utf8'));
      const lines: string[] = [];
      const again = await runOpa(OPA_BIN as string, join(dir, 'opa.yaml'), dir, (l) => lines.push(l));
      opas.push(again);
      await waitForOpa(again, 'the restarted OPA (pinned to B) to allow a read', 30_000, async () =>
        (await decides(again, 'read')) ? true : undefined,
      );
      // OPA verifies its persisted bundle with the key it is pinned to now: the A-signed one is not
      // loaded (one line saying so), and the B-signed archive is downloaded and activated.
      expect(lines.filter((l) => VERIFICATION_ERROR.test(l)).map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual([
        'Failed to load bundle from disk: failed to verify message: crypto/rsa: verification error',
      ]);
      const revision = await opaJson(again, `/v1/data/system/bundles/${BUNDLE}/manifest/revision`);
      expect((revision.body as { result?: string }).result).toBe(
        String(service.service.store.snapshot().tenants.get(TENANT)?.bundles.get(BUNDLE)?.built.revision),
      );
    }, 120_000);
  });
else
  describe('a signing key rotation in standalone mode with real OPAs', () => {
    it.skip('is skipped: set OPA_BIN to the path of an opa binary to run it (make test-opa)', () => {});
  });
