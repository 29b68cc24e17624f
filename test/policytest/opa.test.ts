// The OPA side of `acl-operator test` without a real OPA: a fake `opa` that answers wrongly makes a
// disagreement (exit 1), and an OPA that is missing, does not run, or answers nonsense is exit 2 with
// a clear message. test/opa/policytest.test.ts runs the examples under a real OPA (OPA_BIN).
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openOpa } from '../../src/opa/index.ts';
import { cli, offlineOf, ROOT, stackLines } from './support.ts';
import { runSuite } from '../../src/policytest/index.ts';

/** A fake opa: `version` prints a version; `eval` reads the inputs on stdin and answers as FAKE_OPA says. */
const FAKE = `#!${process.execPath}
const mode = process.env.FAKE_OPA ?? 'allow';
const [command] = process.argv.slice(2);
if (command === 'version') {
  if (mode === 'version-fails') { process.stderr.write('cannot start\\n'); process.exit(1); }
  process.stdout.write(mode === 'no-version' ? 'hello\\n' : 'Version: 9.9.9-fake\\nBuild Commit: none\\n');
  process.exit(0);
}
let text = '';
process.stdin.on('data', (c) => { text += c; });
process.stdin.on('end', () => {
  if (mode === 'eval-fails') { process.stderr.write('error: bundle is broken\\n'); process.exit(3); }
  const inputs = JSON.parse(text);
  const value = mode === 'short' ? [] : inputs.map(() => true);
  process.stdout.write(JSON.stringify({ result: [{ expressions: [{ value }] }] }));
});
`;

let tmp = '';
let fake = '';
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'acl-ptest-opa-'));
  fake = join(tmp, 'opa');
  await writeFile(fake, FAKE);
  await chmod(fake, 0o755);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('acl-operator test --opa', () => {
  it('reports an OPA that decides otherwise as a disagreement, showing both decisions, with exit status 1', () => {
    const r = cli(['test', '--manifests', 'examples', '--opa', fake]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain(`OPA 9.9.9-fake (${fake}) on the bundles`);
    expect(r.stdout).toContain(`DISAGREE  examples/acme.test.yaml:27  a red member cannot read a blue document
  tenant:     acme
  request:    {"principal":{"team":"red","type":"user","id":"u-red"},"action":"read","resource":{"team":"blue","owner":"u-blue","legalHold":false,"type":"document","id":"doc-blue"},"context":{},"actionProperties":{}}
  expected:   deny, with a reason containing "principal.team == resource.team is false"
  got:        deny
  OPA 9.9.9-fake: allow on bundle acme/gateway-all-v1, allow on bundle acme/gateway-documents
`);
    expect(r.stdout).toContain(
      '  disagrees:  OPA 9.9.9-fake decides allow on bundle acme/gateway-all-v1, allow on bundle acme/gateway-documents; the native evaluator deny\n',
    );
    // Every case the fake allows but the evaluator denies: all the deny cases.
    expect(r.stdout).toMatch(/\n43 cases: 19 passed, 0 failed, 24 disagreements with OPA, 0 not checked by OPA \(/);
  });

  it('takes the OPA from OPA_BIN when --opa is not given', () => {
    const r = cli(['test', '--manifests', 'examples', '--format', 'json'], { OPA_BIN: fake, FAKE_OPA: 'allow' });
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ opa: { binary: fake, version: '9.9.9-fake' } });
  });

  it('exits 2 when the OPA binary does not exist, naming it', () => {
    const missing = join(tmp, 'no-such-opa');
    const r = cli(['test', '--manifests', 'examples', '--opa', missing]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`--opa ${missing}: cannot run it: spawn ${missing} ENOENT\n`);
  });

  it('refuses an OPA that does not run, does not say its version, fails or answers nonsense', async () => {
    const offline = await offlineOf(join(ROOT, 'examples'));
    const text =
      'tenant: acme\ncases:\n  - {name: c, subject: {type: user, id: u}, action: read, resource: {type: document, id: d}, expect: deny}\n';
    const withMode = async (mode: string): Promise<string> => {
      process.env['FAKE_OPA'] = mode;
      try {
        const opa = await openOpa(fake);
        if (typeof opa === 'string') return opa;
        const outcome = await runSuite(offline, [{ file: 'c.test.yaml', text }], { manifests: 'examples', opa });
        return outcome.ok ? 'ok' : 'opaFailure' in outcome ? outcome.opaFailure : 'errors';
      } finally {
        delete process.env['FAKE_OPA'];
      }
    };
    expect(await withMode('version-fails')).toBe(`--opa ${fake}: \`${fake} version\` failed (exit 1): cannot start`);
    expect(await withMode('no-version')).toBe(`--opa ${fake}: \`${fake} version\` does not print an OPA version: hello`);
    expect(await withMode('eval-fails')).toMatch(
      /^OPA 9\.9\.9-fake failed on bundle acme\/gateway-(all-v1|documents) \(exit 3\): error: bundle is broken$/,
    );
    expect(await withMode('short')).toMatch(
      /^OPA 9\.9\.9-fake answered on bundle acme\/gateway-(all-v1|documents) with something other than 1 decisions: /,
    );
    const r = cli(['test', '--manifests', 'examples', '--opa', fake], { FAKE_OPA: 'eval-fails' });
    expect(r.status).toBe(2);
    expect(stackLines(r.stderr)).toEqual([]);
  });
});
