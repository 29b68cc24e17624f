// The service as a person starts it: the process, its banner, `status`, and a graceful SIGTERM.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { stripVTControlCharacters } from 'node:util';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readSigningKey } from '../src/signing/index.ts';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'src', 'cli.ts');
const tmp = mkdtempSync(join(tmpdir(), 'acl-serve-'));
const state = join(tmp, 'state');

let child: ChildProcessWithoutNullStreams;
let banner = '';
let exit: Promise<number | null>;

beforeAll(async () => {
  child = spawn(
    process.execPath,
    [
      CLI,
      '--manifests',
      'examples',
      '--state-dir',
      state,
      '--insecure-http',
      '--listen',
      '127.0.0.1:0',
      '--ops-listen',
      '127.0.0.1:0',
      '--console-listen',
      '127.0.0.1:0',
      '--log-level',
      'warn',
    ],
    { cwd: ROOT },
  );
  exit = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      banner += chunk.toString('utf8');
      if (banner.includes('Status like kubectl get')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`exited with ${String(code)}: ${banner}`)));
  });
});

afterAll(() => {
  child.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});

/** Runs a line of the banner the way a person pastes it into a shell. */
function paste(line: string): string {
  const r = spawnSync('bash', ['-c', line], { cwd: tmp, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('acl-operator serve', () => {
  it('prints where it listens, the token files and one OPA configuration per bundle', () => {
    expect(banner).toMatch(/^ {4}services:\n {6}acl:\n {8}url: http:\/\/127\.0\.0\.1:\d+\/acme\/connectors\/policyagent\/gateways$/m);
    expect(banner).toMatch(/API +http:\/\/127\.0\.0\.1:\d+ +\(plain HTTP\)/);
    expect(banner).toContain(`token file (OPA token_path)  ${join(state, 'tokens', 'acme', 'gateways')}`);
    expect(banner).toContain('One OPA per bundle');
    // Signed by default: a key made at the first start, every configuration pinned to it.
    const kid = readSigningKey(readFileSync(join(state, 'signing', 'current.pem'), 'utf8')).kid;
    expect(banner).toContain(`  Signing  bundles signed with key ${kid} (${join(state, 'signing', 'current.pem')})`);
    expect(banner).toContain(`rotate it: acl-operator rotate-key --state-dir ${state}`);
    const expected = [
      ['acme', 'gateways', 'gateway-all-v1'],
      ['acme', 'gateways', 'gateway-documents'],
      ['records', 'record-services', 'records'],
    ] as const;
    for (const [tenant, connector, bundle] of expected) {
      const opaFile = join(state, 'opa', tenant, `${bundle}.yaml`);
      expect(banner).toContain(`bundle ${bundle}: opa run --server --config-file ${opaFile}`);
      const config = parse(readFileSync(opaFile, 'utf8')) as {
        services: Record<string, { url: string; credentials: { bearer: { token_path: string } } }>;
        bundles: Record<string, { service: string; resource: string; polling: Record<string, number> }>;
        keys: Record<string, { algorithm: string }>;
        status: unknown;
        decision_logs: unknown;
      };
      // Exactly one bundle: two of ours in one OPA would overlap on roots ["acl"].
      expect(Object.keys(config.bundles)).toEqual([bundle]);
      expect(config.services['acl']?.url).toMatch(
        new RegExp(`^http://127\\.0\\.0\\.1:\\d+/${tenant}/connectors/policyagent/${connector}$`),
      );
      expect(config.services['acl']?.credentials.bearer.token_path).toBe(join(state, 'tokens', tenant, connector));
      expect(config.bundles[bundle]).toMatchObject({
        service: 'acl',
        resource: `bundles/${bundle}?key=${kid}`,
        polling: { long_polling_timeout_seconds: 60 },
        signing: { keyid: kid },
      });
      expect(config.keys).toEqual({ [kid]: { algorithm: 'RS256', key: expect.stringContaining('BEGIN PUBLIC KEY') } });
      expect(config.status).toEqual({ service: 'acl' });
      expect(config.decision_logs).toMatchObject({ service: 'acl' });
    }
    expect(
      readdirSync(join(state, 'opa'), { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('.yaml'))
        .sort(),
    ).toEqual(expected.map(([tenant, , bundle]) => join(tenant, `${bundle}.yaml`)).sort());
  });

  it('prints a decision curl that works when pasted', () => {
    const line = banner.split('\n').find((l) => l.trim().startsWith('curl') && l.includes('/authorization')) ?? '';
    const reply = JSON.parse(paste(line)) as { decision: string; reasons: string[] };
    expect(reply.decision).toBe('deny');
    expect(reply.reasons.join(' ')).toMatch(/is missing/);
  });

  it('prints an AuthZEN evaluation curl that works when pasted, deciding like the decision curl', () => {
    const line = banner.split('\n').find((l) => l.trim().startsWith('curl') && l.includes('/access/v1/evaluation')) ?? '';
    expect(JSON.parse(paste(line))).toEqual({ decision: false });
  });

  it('prints a bundle curl that works when pasted', () => {
    const line = banner.split('\n').find((l) => l.trim().startsWith('curl') && l.includes('/bundles/')) ?? '';
    const headers = paste(line);
    expect(headers).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(headers).toMatch(/content-type: application\/vnd\.openpolicyagent\.bundles/i);
    const listing = spawnSync('tar', ['tzf', join(tmp, 'bundle.tar.gz')], { encoding: 'utf8' }).stdout;
    // Signed by default: the third file holds the signature over the other two.
    expect(listing.split('\n').filter(Boolean)).toEqual(['.manifest', 'policy.rego', '.signatures.json']);
  });

  it('shows status as kubectl-like tables', () => {
    const r = spawnSync(process.execPath, [CLI, 'status', '--state-dir', state], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^NAMESPACE +NAME +STATE +PHASE +SUBJECT +ACTIONS +RESOURCE +TRANSLATION/);
    expect(r.stdout).toMatch(/acme +team-documents +Enforced +Enforced +user +read,write +document +Current/);
    expect(r.stdout).toMatch(/acme +contractors-comment +Proposed +Proposed/);
    expect(r.stdout).toMatch(/acme +gateways +Active +\d{4}-\d\d-\d\dT[\d:]+Z +gateways-token +gateway-all-v1,gateway-documents/);
    expect(r.stdout).toMatch(/acme +gateway-documents +gateways +Ready +1 +4 +0\/0 +Unknown +\w+ +sha256:/);
    expect(r.stdout).toContain('One OPA per bundle');
    expect(r.stdout).toContain('No problems in the manifests folder.');
    const rule = spawnSync(process.execPath, [CLI, 'status', '--state-dir', state, '--rule', 'acme/team-documents'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(rule.stdout).toContain('Translation  Current (generation 1)');
    expect(rule.stdout).toContain('input.principal.team == input.resource.team');
  });

  it('stops cleanly on SIGTERM', async () => {
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });
});

describe('acl-operator serve refuses bad setups', () => {
  it.each([
    [['--manifests', 'examples'], /needs TLS/],
    [['--manifests', 'no-such-folder', '--insecure-http'], /--manifests no-such-folder: ENOENT/],
    [['--insecure-http'], /No Kubernetes cluster configured/, 1],
    [['--tls-secret', 'x'], /No Kubernetes cluster configured/, 1],
    [['--insecure-http', '--kubeconfig', '/no/such/kubeconfig'], /--kubeconfig \/no\/such\/kubeconfig cannot be read: ENOENT/, 1],
    [['--manifests', 'examples', '--tls-secret', 'x'], /--tls-secret is for Kubernetes mode/],
    [['--tls-self-signed', '--tls-secret', 'x'], /choose one of/],
    [['--insecure-http', '--namespaces', 'acme,Bad_Name'], /"Bad_Name" is not a namespace name/],
    [
      ['--manifests', 'examples', '--insecure-http', '--decision-log', '/no/such/folder/decisions.log'],
      /--decision-log \/no\/such\/folder\/decisions\.log: ENOENT/,
    ],
    [['--manifests', 'examples', '--insecure-http', '--decision-log', '/tmp'], /--decision-log \/tmp: EISDIR/],
  ])('%j', (args, message, status = 2) => {
    // No cluster in sight: no KUBECONFIG, and a HOME without .kube/config.
    const env = { ...process.env, HOME: tmp, KUBECONFIG: '' };
    const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', env });
    expect(r.status).toBe(status);
    expect(r.stderr).toMatch(message);
  });

  it('exits 1 naming the flag, and closes what it opened, when --opa does not run or the console port is taken', async () => {
    const serve = (extra: string[]) =>
      spawnSync(
        process.execPath,
        [
          CLI,
          '--manifests',
          'examples',
          '--state-dir',
          join(tmp, 'refused-state'),
          '--insecure-http',
          '--listen',
          '127.0.0.1:0',
          '--ops-listen',
          '127.0.0.1:0',
          ...extra,
        ],
        // A start that failed but left a listener or a thread open would never exit: the timeout fails the test.
        { cwd: ROOT, encoding: 'utf8', timeout: 30_000 },
      );
    const opa = serve(['--console-listen', '127.0.0.1:0', '--opa', '/no/such/opa']);
    expect(opa.status).toBe(1);
    expect(opa.stderr).toMatch(/acl-operator: --opa \/no\/such\/opa: cannot run it/);
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const r = serve(['--console-listen', `127.0.0.1:${port}`]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`acl-operator: --console-listen 127\\.0\\.0\\.1:${port}: listen EADDRINUSE`));
    } finally {
      taken.close();
    }
  });

  it('exits 2 naming the key file and what to do when the signing key cannot sign', () => {
    const dir = join(tmp, 'bad-key-state');
    mkdirSync(join(dir, 'signing'), { recursive: true });
    writeFileSync(join(dir, 'signing', 'current.pem'), 'not a key\n', { mode: 0o600 });
    const r = spawnSync(
      process.execPath,
      [CLI, '--manifests', 'examples', '--state-dir', dir, '--insecure-http', '--listen', '127.0.0.1:0', '--ops-listen', '127.0.0.1:0'],
      { cwd: ROOT, encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`acl-operator: cannot sign bundles: ${join(dir, 'signing', 'current.pem')} is not a PEM private key`);
    expect(r.stderr).toMatch(/or serve with --unsigned-bundles\n/);
  });

  it('says where it is not a state folder', () => {
    const r = spawnSync(process.execPath, [CLI, 'status', '--state-dir', `${tmp}/nothing`], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/is not the state folder/);
  });
});

describe('acl-operator rotate-key', () => {
  const rotate = (dir: string) => spawnSync(process.execPath, [CLI, 'rotate-key', '--state-dir', dir], { cwd: ROOT, encoding: 'utf8' });

  it('starts a rotation in the state folder serve made, prints the new key and what to do next, and refuses a second one', () => {
    const before = readSigningKey(readFileSync(join(state, 'signing', 'current.pem'), 'utf8')).kid;
    const r = rotate(state);
    expect(r.status, r.stderr).toBe(0);
    const now = readSigningKey(readFileSync(join(state, 'signing', 'current.pem'), 'utf8')).kid;
    expect(readSigningKey(readFileSync(join(state, 'signing', 'previous.pem'), 'utf8')).kid).toBe(before);
    expect(r.stdout).toContain(`  new key       ${now}  (signing/current.pem`);
    expect(r.stdout).toContain(`  previous key  ${before}  (signing/previous.pem`);
    expect(r.stdout).toMatch(/Restart each OPA with its rewritten configuration/);
    const again = rotate(state);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(new RegExp(`^acl-operator rotate-key: a rotation is already running: .*previous\\.pem \\(${before}\\)`));
  });

  it('exits 2 where serve never made a key', () => {
    const r = rotate(join(tmp, 'no-state'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/current\.pem does not exist: acl-operator serve creates the first key when it starts/);
  });
});

describe('acl-operator serve --decision-log stdout', () => {
  /** Serves examples/ with --decision-log stdout and `extra`, makes `decisions` decisions, stops it: what it wrote to stdout. */
  async function stdoutOfDecisions(decisions: number, extra: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), 'acl-serve-log-'));
    const proc = spawn(
      process.execPath,
      [
        CLI,
        '--manifests',
        'examples',
        '--state-dir',
        join(dir, 'state'),
        '--insecure-http',
        '--listen',
        '127.0.0.1:0',
        '--ops-listen',
        '127.0.0.1:0',
        '--console-listen',
        '127.0.0.1:0',
        '--decision-log',
        'stdout',
        ...extra,
      ],
      { cwd: ROOT, env: { ...process.env, ...env } },
    );
    let out = '';
    let err = '';
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    const url = await new Promise<string>((resolve, reject) => {
      proc.stderr.on('data', (c: Buffer) => {
        err += c.toString('utf8');
        const m = /API +(http:\/\/127\.0\.0\.1:\d+)/.exec(err);
        if (m && err.includes('Status like kubectl get')) resolve(m[1] as string);
      });
      proc.on('exit', (code) => reject(new Error(`exited with ${String(code)}: ${err}`)));
    });
    for (let i = 0; i < decisions; i++) {
      const res = await fetch(`${url}/authorization`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer acme-example-key-for-local-use-only' },
        body: JSON.stringify({
          subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
          action: 'read',
          resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
        }),
      });
      expect(res.status).toBe(200);
    }
    const exited = new Promise((resolve) => proc.on('exit', resolve));
    proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    return out;
  }

  it('writes decision lines and log lines to stdout, each line whole', async () => {
    const out = await stdoutOfDecisions(1);
    const lines = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l['stream'] === 'decisions')).toMatchObject([
      { tenant: 'acme', source: 'service', decision: 'allow', policyId: 'acme/team-documents' },
    ]);
    expect(lines.some((l) => l['msg'] === 'Serving')).toBe(true);
  });

  it('writes log lines a person reads when asked (ACL_LOG_FORMAT=pretty), decision lines still JSON, never one inside another', async () => {
    // At debug level every decision also logs a line: the two writers alternate on one stdout.
    const out = await stdoutOfDecisions(40, ['--log-level', 'debug'], { ACL_LOG_FORMAT: 'pretty' });
    // Colours aside: the test's environment may force them on.
    const lines = stripVTControlCharacters(out).trimEnd().split('\n');
    const decisions = lines.filter((l) => l.startsWith('{'));
    const logged = lines.filter((l) => !l.startsWith('{'));
    expect(decisions.map((l) => (JSON.parse(l) as Record<string, unknown>)['decision'])).toEqual(Array(40).fill('allow'));
    for (const l of logged) expect(l).toMatch(/^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) [A-Z]/);
    expect(
      logged.filter((l) => / DEBUG Decided {2}module=http tenant=acme decision=allow policyId=acme\/team-documents$/.test(l)),
    ).toHaveLength(40);
    expect(logged.some((l) => / INFO {2}Serving {2}url=http:\/\/127\.0\.0\.1:\d+ tenants=\["acme","records"\] problems=0$/.test(l))).toBe(
      true,
    );
  });

  it('writes JSON log lines when --log-format json asks, whatever ACL_LOG_FORMAT says', async () => {
    const out = await stdoutOfDecisions(1, ['--log-format', 'json'], { ACL_LOG_FORMAT: 'pretty' });
    const lines = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l['msg'] === 'Serving')).toBe(true);
  });
});

describe('acl-operator serve with lint findings', () => {
  const RULE = (name: string, spec: string): string =>
    `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: {name: ${name}, namespace: todo}\nspec: {subjectType: user, actions: [read], resourceType: todo${spec}}\n`;

  it('counts them in the banner, and logs each finding once when it appears', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'acl-serve-lint-'));
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests);
    writeFileSync(join(manifests, 'rules.yaml'), RULE('loose', ''));
    const proc = spawn(
      process.execPath,
      [
        CLI,
        ...['--manifests', manifests, '--state-dir', join(dir, 'state'), '--insecure-http'],
        ...[
          '--listen',
          '127.0.0.1:0',
          '--ops-listen',
          '127.0.0.1:0',
          '--console-listen',
          '127.0.0.1:0',
          '--log-level',
          'warn',
          '--settle-ms',
          '0',
        ],
      ],
      { cwd: ROOT },
    );
    let out = '';
    let err = '';
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    await new Promise<void>((resolve, reject) => {
      proc.stderr.on('data', (c: Buffer) => {
        err += c.toString('utf8');
        if (err.includes('Status like kubectl get')) resolve();
      });
      proc.on('exit', (code) => reject(new Error(`exited with ${String(code)}: ${err}`)));
    });
    try {
      expect(err).toContain(`  Lint     1 lint finding(s) (each with its fix: acl-operator lint --manifests ${manifests})`);
      expect(err).toContain('    - rules.yaml: Rule todo/loose: StateNotSet: spec.state is not set');
      const found = (): Record<string, unknown>[] =>
        out
          .split('\n')
          .filter((l) => l.includes('"Found a lint finding"'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
      const until = async (what: string, ok: () => boolean): Promise<void> => {
        const deadline = Date.now() + 20_000;
        while (!ok()) {
          if (Date.now() > deadline) throw new Error(`no ${what} in ${out}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      // A finding that appears while it serves is logged, with its code and object as fields.
      writeFileSync(
        join(manifests, 'more.yaml'),
        RULE('todo-owner', ', state: Draft, condition: "resource.properties.ownerID == principal.id"'),
      );
      await until('PropertiesPath line', () => found().some((l) => l['code'] === 'PropertiesPath'));
      expect(found().find((l) => l['code'] === 'PropertiesPath')).toMatchObject({
        level: 40,
        kind: 'Rule',
        namespace: 'todo',
        name: 'todo-owner',
        hint: 'read resource.ownerID instead',
      });
      // Another change later: the findings already reported are not logged again.
      writeFileSync(
        join(manifests, 'spare.yaml'),
        'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Connector\nmetadata: {name: spare, namespace: todo}\nspec: {}\n',
      );
      await until('ConnectorUnused line', () => found().some((l) => l['code'] === 'ConnectorUnused'));
      expect(found().map((l) => `${String(l['code'])} ${String(l['name'])}`)).toEqual([
        'StateNotSet loose',
        'PropertiesPath todo-owner',
        'ConnectorUnused spare',
      ]);
    } finally {
      const exited = new Promise((resolve) => proc.on('exit', resolve));
      proc.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
