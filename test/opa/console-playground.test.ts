// The console's playground with a real OPA (OPA_BIN; CI runs it with OPA 1.1 and 0.61): the same
// request, decided by OPA on the exact bytes of each bundle that carries the rule, agrees with the
// service, on allow and on deny. test/console/http/rule.test.ts covers a fake OPA that disagrees.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type ConsoleClient } from '../support/console.ts';
import { allowed, denied, PLAYGROUND_MANIFESTS, tryIt } from '../support/console-rule.ts';
import { opaVersion } from '../support/opa.ts';
import { API_KEY, startTestService, type TestService } from '../support/service.ts';

const OPA_BIN = process.env['OPA_BIN'];

if (OPA_BIN)
  describe(`the console's playground with a real OPA (OPA_BIN=${OPA_BIN})`, () => {
    const version = opaVersion(OPA_BIN).join('.');
    let t: TestService;
    let tenant: ConsoleClient;
    beforeAll(async () => {
      t = await startTestService({ manifests: PLAYGROUND_MANIFESTS, config: { opa: OPA_BIN } });
      tenant = await signIn(t, API_KEY);
    });
    afterAll(() => t.stop());

    it('agrees with the service on every bundle carrying the rule when it allows', async () => {
      const r = await tryIt(tenant, allowed);
      expect(r.text).toContain('Decision <span class="badge ok">ALLOW</span>');
      expect(r.text).toContain(`OPA ${version} agrees with the service on every bundle.`);
      expect(r.text.match(/<span class="badge ok">agrees<\/span>/g)).toHaveLength(2);
      expect(r.text).not.toContain('DISAGREES');
    });

    it('agrees when it denies, in the AuthZEN shape too', async () => {
      const r = await tryIt(tenant, { ...denied, action: { name: 'write' } });
      expect(r.text).toContain('Decision <span class="badge bad">DENY</span>');
      expect(r.text).toContain(`OPA ${version} agrees with the service on every bundle.`);
      expect(r.text.match(/<td><span class="badge bad">deny<\/span><\/td>/g)).toHaveLength(2);
    });

    it('agrees through the directory: OPA merges the entities its bundle embeds', async () => {
      const r = await tryIt(tenant, { subject: { type: 'user', id: 'bob' }, action: 'read', resource: allowed.resource });
      expect(r.text).toContain('Decision <span class="badge ok">ALLOW</span>');
      expect(r.text).toContain(`OPA ${version} agrees with the service on every bundle.`);
    });
  });
else
  describe("the console's playground with a real OPA", () => {
    it.skip('is skipped: set OPA_BIN to the path of an opa binary to run it (make test-opa)', () => {});
  });
