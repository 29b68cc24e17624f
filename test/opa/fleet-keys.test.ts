// Real OPAs (OPA_BIN) report the key they verify with: the `acl-signing-key` label every signed
// configuration we print sets (opa/config.ts) comes back in OPA's status report, and the service
// shows it per agent in GET .../agents and counts it in KeyRotated. Both OPA lines send custom
// labels beside `id` and `version`; an OPA without the label shows as naming no key.
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFailed } from 'vitest';
import { parse, stringify } from 'yaml';
import { SIGNING_KEY_LABEL } from '../../src/opa/index.ts';
import { opaConfigFile } from '../../src/standalone/index.ts';
import { opaTestScope, runOpa, SIDECARS, sidecarsManifest, waitForOpa, type RunningOpa } from '../support/opa.ts';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

const OPA_BIN = process.env['OPA_BIN'];
const { tenant: TENANT, connector: CONNECTOR, bundle: BUNDLE } = SIDECARS;
const KID = 'acl-0123456789abcdef';

interface Agents {
  signingKeys: { kid: string | null; agents: number }[];
  list: { id: string; signingKey: string | null; activeRevision: string | null }[];
}

const scope = opaTestScope();
const { opas, dirs } = scope;

/** An OPA from the configuration the service wrote, with `acl-signing-key` set when `kid` is given. */
async function startOpa(service: TestService, kid: string | undefined): Promise<RunningOpa> {
  const dir = await mkdtemp(join(tmpdir(), 'acl-opa-keys-'));
  dirs.push(dir);
  const config = parse(readFileSync(opaConfigFile(service.stateDir, TENANT, BUNDLE), 'utf8')) as Record<string, unknown>;
  const labels = { ...(config['labels'] as Record<string, string> | undefined) };
  if (kid === undefined) delete labels[SIGNING_KEY_LABEL];
  else labels[SIGNING_KEY_LABEL] = kid;
  const file = join(dir, 'opa.yaml');
  await writeFile(file, stringify({ ...config, labels }));
  const opa = await runOpa(OPA_BIN as string, file, dir);
  opas.push(opa);
  return opa;
}

if (OPA_BIN)
  describe(`real OPAs report the key they verify with (OPA_BIN=${OPA_BIN})`, () => {
    it('shows the acl-signing-key label of each OPA, and none for an OPA without it', async () => {
      const service = await startTestService({
        manifests: { 'connectors.yaml': sidecarsManifest('{}'), 'keys.yaml': BASE_MANIFESTS['keys.yaml'] as string },
        serviceOptions: { agentStatusIntervalMs: 200 },
      });
      scope.service = service;
      const labelled = await startOpa(service, KID);
      await startOpa(service, undefined);
      const read = async (): Promise<Agents> =>
        (await (
          await service.api(`/${TENANT}/connectors/policyagent/${CONNECTOR}/bundles/${BUNDLE}/agents`, {
            headers: { Authorization: `Bearer ${API_KEY}` },
          })
        ).json()) as Agents;
      onTestFailed(async () => {
        console.error(`--- agents:\n${JSON.stringify(await read(), null, 1)}`);
        for (const o of opas) console.error(`--- OPA at ${o.url}:\n${o.output()}`);
      });
      const seen = await waitForOpa(labelled, 'both OPAs reporting', 30_000, async () => {
        const a = await read();
        return a.list.length === 2 && a.list.every((x) => x.activeRevision !== null) ? a : undefined;
      });
      expect(seen.list.map((a) => a.signingKey).sort()).toEqual([KID, null]);
      expect(seen.signingKeys).toEqual([
        { kid: KID, agents: 1 },
        { kid: null, agents: 1 },
      ]);
      await service.service.controller.idle();
      const status = service.service.state.object('Bundle', TENANT, BUNDLE)?.status as { conditions?: { type: string }[] } | undefined;
      expect(status?.conditions?.map((c) => c.type)).toContain('KeyRotated');
    });
  });
else
  describe('real OPAs report the key they verify with', () => {
    it.skip('is skipped: set OPA_BIN to the path of an opa binary to run it (make test-opa)', () => {});
  });
