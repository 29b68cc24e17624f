// The OPA configurations `acl-operator serve` writes for examples/ (one per bundle, what `make run`
// prints), each loaded by a real OPA (OPA_BIN): every one must reach GET /health?bundles 200 with
// the revision the service serves, since that is the readiness probe of a sidecar. The shape they
// replace (one configuration per connector, listing both of its bundles) must not: a real OPA
// refuses the second bundle for overlapping roots, which is the defect this guards against.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { opaJson, opaVersion, runOpa, waitForOpa, type RunningOpa } from '../support/opa.ts';
import { startTestService, type TestService } from '../support/service.ts';

const OPA_BIN = process.env['OPA_BIN'];
const EXAMPLES = join(import.meta.dirname, '..', '..', 'examples');

interface OpaConfigDoc {
  services: Record<string, unknown>;
  bundles: Record<string, { resource: string }>;
  [key: string]: unknown;
}

if (OPA_BIN)
  describe(`the OPA configurations serve writes, in a real OPA (OPA_BIN=${OPA_BIN})`, () => {
    let t: TestService;
    const running: RunningOpa[] = [];
    const dirs: string[] = [];
    beforeAll(async () => {
      opaVersion(OPA_BIN);
      const manifests = Object.fromEntries(
        readdirSync(EXAMPLES)
          .filter((f) => f.endsWith('.yaml'))
          .map((f) => [f, readFileSync(join(EXAMPLES, f), 'utf8')]),
      );
      // As make run serves them: HTTPS with the self-signed certificate as OPA's ca_cert.
      t = await startTestService({ manifests, tls: { mode: 'self-signed' } });
    });
    afterAll(async () => {
      // OPA uploads its last decision logs when stopped: stop them together, while the service runs.
      await Promise.all(running.map((opa) => opa.stop()));
      for (const d of dirs) await rm(d, { recursive: true, force: true });
      await t?.stop();
    }, 30_000);

    async function start(configFile: string): Promise<RunningOpa> {
      // OPA's working directory holds its persisted bundles (persist: true).
      const dir = await mkdtemp(join(tmpdir(), 'acl-opa-config-'));
      dirs.push(dir);
      const opa = await runOpa(OPA_BIN as string, configFile, dir);
      running.push(opa);
      return opa;
    }

    const configs = (): { tenant: string; bundle: string; file: string }[] => {
      const root = join(t.stateDir, 'opa');
      return readdirSync(root, { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('.yaml'))
        .sort()
        .map((f) => {
          const [tenant, name] = f.split('/') as [string, string];
          return { tenant, bundle: name.replace(/\.yaml$/, ''), file: join(root, f) };
        });
    };

    it('writes one configuration per bundle, and a real OPA activates each (/health?bundles 200)', async () => {
      const written = configs();
      const served = [...t.service.store.snapshot().tenants.values()]
        .flatMap((tn) => [...tn.bundles.values()].map((b) => `${tn.tenant}/${b.name}`))
        .sort();
      expect(written.map((c) => `${c.tenant}/${c.bundle}`)).toEqual(served);
      expect(served.length).toBeGreaterThanOrEqual(3);
      const opas = await Promise.all(written.map(async (c) => ({ c, opa: await start(c.file) })));
      for (const { c, opa } of opas) {
        await waitForOpa(opa, `OPA on ${c.file} to answer /health?bundles with 200`, 30_000, async () =>
          (await opaJson(opa, '/health?bundles')).status === 200 ? true : undefined,
        );
        const revision = t.service.store.snapshot().tenants.get(c.tenant)?.bundles.get(c.bundle)?.built.revision;
        const active = await opaJson(opa, `/v1/data/system/bundles/${c.bundle}/manifest/revision`);
        // With decision logs on, OPA adds a decision_id to the answer.
        expect((active.body as { result?: unknown }).result, `${c.tenant}/${c.bundle}`).toBe(String(revision));
      }
    });

    it('cannot activate two of our bundles in one OPA: the configuration a connector used to get fails its readiness', async () => {
      // acme's connector gateways has two bundles: put both in one OPA, the way a hand-written
      // configuration (or the old per-connector file) would.
      const [first, second] = configs().filter((c) => c.tenant === 'acme');
      if (!first || !second) throw new Error('examples/ should give acme two bundles');
      const doc = parse(readFileSync(first.file, 'utf8')) as OpaConfigDoc;
      const other = parse(readFileSync(second.file, 'utf8')) as OpaConfigDoc;
      doc.bundles = { ...doc.bundles, ...other.bundles };
      const dir = await mkdtemp(join(tmpdir(), 'acl-opa-both-'));
      dirs.push(dir);
      const file = join(dir, 'both.yaml');
      await writeFile(file, stringify(doc));
      const opa = await start(file);
      // OPA starts its bundle downloaders before it binds its HTTP listener (runtime.Serve: plugins,
      // then the server's Init, then Listeners), so under load the refusal can be logged while
      // nothing listens yet: ask /health only once the refusal is logged, and again until OPA answers.
      const health = await waitForOpa(opa, 'OPA to refuse one of the two bundles, then answer /health?bundles', 30_000, async () =>
        /overlapping roots/.test(opa.output()) ? await opaJson(opa, '/health?bundles') : undefined,
      );
      expect(health.status).toBe(500);
      // Refused for the overlap, not unready: the other bundle, activated first, is the one OPA holds.
      const revisions = await Promise.all(
        [first, second].map(async (c) => (await opaJson(opa, `/v1/data/system/bundles/${c.bundle}/manifest/revision`)).body),
      );
      expect(revisions.filter((r) => (r as { result?: unknown } | undefined)?.result !== undefined)).toHaveLength(1);
    });
  });
else
  describe('the OPA configurations serve writes, in a real OPA', () => {
    it.skip('is skipped: set OPA_BIN to the path of an opa binary to run it (make test-opa)', () => {});
  });
