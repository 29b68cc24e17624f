// Starts the whole standalone service on port 0 over a temporary manifests folder and state folder,
// for behaviour tests. Changes are applied with settle() (an explicit re-read), never by waiting.
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { configFromFlags, type Config, type Tls } from '../../src/config.ts';

/** Both listeners on a free loopback port, the API in plain HTTP. */
export const LOCAL_LISTENERS = [
  '--listen',
  '127.0.0.1:0',
  '--ops-listen',
  '127.0.0.1:0',
  '--console-listen',
  '127.0.0.1:0',
  '--insecure-http',
] as const;
import { startService, type Service, type ServiceOptions } from '../../src/modes/index.ts';
import { generateSigningKeyPem } from '../../src/signing/index.ts';

let cachedKeyPem: string | undefined;
/** One signing key per test process (2048 bits): every service a test starts signs, and RSA generation is slow. */
export function testSigningKeyPem(): string {
  cachedKeyPem ??= generateSigningKeyPem(2048);
  return cachedKeyPem;
}

export const API_KEY = 'test-api-key-0123456789abcdef';

/** An API key Secret: its namespace is the tenant the key decides for. */
export function apiKeySecret(namespace: string, name: string, token: string): string {
  return `apiVersion: v1\nkind: Secret\nmetadata: { name: ${name}, namespace: ${namespace}, labels: { acl.policyagent.dev/api-key: "true" } }\nstringData: { token: ${token} }\n`;
}

/** A second tenant whose connector and bundle carry the same names as acme's `gateways` and `docs`. */
export const GLOBEX_MANIFEST = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: gateways, namespace: globex }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: docs, namespace: globex }
spec: { connector: gateways }
`;

/** An Inactive connector of acme with a bundle (service spec 7.2: a valid token gets 403). */
export const DORMANT_MANIFEST = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: dormant, namespace: acme }
spec: { active: false }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: quiet, namespace: acme }
spec: { connector: dormant }
`;

/** The API key of tenant globex, for fixtures that add one (apiKeySecret('globex', 'key', GLOBEX_KEY)). */
export const GLOBEX_KEY = 'globex-api-key-fedcba9876543210';

/**
 * The fixture of BASE_MANIFESTS + DORMANT_MANIFEST + GLOBEX_MANIFEST (and globex's key), as the
 * contract sees it: `tenant/bundle` → its connector, `tenant/connector` → Active, API key → tenant.
 */
export const FIXTURE = {
  owner: new Map([
    ['acme/docs', 'gateways'],
    ['acme/internal', 'backends'],
    ['acme/quiet', 'dormant'],
    ['globex/docs', 'gateways'],
  ]),
  active: new Map([
    ['acme/gateways', true],
    ['acme/backends', true],
    ['acme/dormant', false],
    ['globex/gateways', true],
  ]),
  keys: new Map([
    [API_KEY, 'acme'],
    [GLOBEX_KEY, 'globex'],
  ]),
} as const;

export const BASE_MANIFESTS: Record<string, string> = {
  'connectors.yaml': `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: gateways, namespace: acme }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: backends, namespace: acme }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: docs, namespace: acme }
spec: { connector: gateways, entityTypes: [document] }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: internal, namespace: acme }
spec: { connector: backends }
`,
  'rules.yaml': `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: team-documents, namespace: acme }
spec:
  state: Enforced
  subjectType: user
  actions: [read, write]
  resourceType: document
  condition: principal.team == resource.team
`,
  'keys.yaml': apiKeySecret('acme', 'key', API_KEY),
};

export interface TestService {
  readonly manifests: string;
  readonly stateDir: string;
  readonly service: Service;
  readonly url: string;
  /** fetch against the API listener. */
  api(path: string, init?: RequestInit): Promise<Response>;
  ops(path: string): Promise<Response>;
  /** The current token of a connector, from the state folder's token file. */
  token(tenant: string, connector: string): Promise<string>;
  bundle(tenant: string, connector: string, bundle: string, headers?: Record<string, string>): Promise<Response>;
  decide(body: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Writes (or with undefined removes) a manifest file, then re-reads the folder and waits for the drain. */
  write(file: string, text: string | undefined): Promise<void>;
  settle(): Promise<void>;
  stop(): Promise<void>;
  /** Stops and starts again on the same folders, running `whileDown` in between. */
  restart(whileDown?: () => Promise<void>): Promise<TestService>;
}

export interface TestServiceOptions {
  readonly manifests?: Record<string, string>;
  readonly tls?: Tls;
  readonly serviceOptions?: ServiceOptions;
  readonly maxBodyBytes?: number;
  readonly maxLongPollSeconds?: number;
  /** --public-url (default: the listener's URL). */
  readonly publicUrl?: string;
  /** Reuse folders (restart). */
  readonly dirs?: { manifests: string; stateDir: string };
  /** The temporary folder holding both, removed by stop(). */
  readonly root?: string;
  /** Any other setting (--decision-log, --agent-expiry-seconds, ...). */
  readonly config?: Partial<Config>;
}

const silent = pino({ level: 'silent' });

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const root = options.dirs ? options.root : await mkdtemp(join(tmpdir(), 'acl-test-'));
  const manifests = options.dirs?.manifests ?? join(root as string, 'manifests');
  const stateDir = options.dirs?.stateDir ?? join(root as string, 'state');
  if (!options.dirs) {
    await mkdir(manifests, { recursive: true });
    for (const [file, text] of Object.entries(options.manifests ?? BASE_MANIFESTS)) await writeFile(join(manifests, file), text);
  }
  // Everything a test does not set is what `serve` would run with (the flags table's defaults).
  const config: Config = {
    ...configFromFlags([
      '--manifests',
      manifests,
      '--state-dir',
      stateDir,
      ...LOCAL_LISTENERS,
      '--log-level',
      'silent',
      '--rescan-seconds',
      '0',
    ]),
    tls: options.tls ?? { mode: 'insecure' },
    publicUrl: options.publicUrl,
    maxBodyBytes: options.maxBodyBytes ?? 64 * 1024,
    maxLongPollSeconds: options.maxLongPollSeconds ?? 30,
    ...options.config,
  };
  // Deletions and edits apply at once here (confirmDeleteMs 0, settleMs 0) unless a test asks for the delays.
  const service = await startService(config, {
    log: silent,
    activityFlushMs: 3_600_000,
    debounceMs: 3_600_000,
    confirmDeleteMs: 0,
    settleMs: 0,
    newSigningKeyPem: testSigningKeyPem,
    ...options.serviceOptions,
  });
  const url = service.apiUrl.replace('localhost', '127.0.0.1');
  const settle = async (): Promise<void> => {
    await service.source.rescan();
    await service.controller.idle();
  };
  const t: TestService = {
    manifests,
    stateDir,
    service,
    url,
    api: (path, init) => fetch(`${url}${path}`, init),
    ops: (path) => fetch(`${service.opsUrl.replace('localhost', '127.0.0.1')}${path}`),
    token: async (tenant, connector) => (await readFile(service.state.tokenFile(tenant, connector), 'utf8')).trim(),
    async bundle(tenant, connector, bundle, headers = {}) {
      return fetch(`${url}/${tenant}/connectors/policyagent/${connector}/bundles/${bundle}`, { headers });
    },
    decide: (body, headers = {}) =>
      fetch(`${url}/authorization`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}`, ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    async write(file, text) {
      const path = join(manifests, file);
      if (text === undefined) await rm(path, { force: true });
      else {
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, text);
      }
      await settle();
    },
    settle,
    async stop() {
      await service.stop();
      if (root) await rm(root, { recursive: true, force: true });
    },
    async restart(whileDown) {
      await service.stop();
      await whileDown?.();
      return startTestService({ ...options, dirs: { manifests, stateDir }, ...(root ? { root } : {}) });
    },
  };
  return t;
}
