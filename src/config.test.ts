import { describe, expect, it } from 'vitest';
import {
  commandDefaults,
  DEFAULT_FLEET,
  DEFAULT_FOLDER,
  DEFAULT_KUBE,
  kubePublicUrl,
  parseAddress,
  readConfig,
  SERVE_USAGE,
} from './config.ts';

describe('readConfig', () => {
  it('turns the console off with --console-listen off, and refuses a bad address by name', () => {
    const base = ['--manifests', 'm', '--insecure-http'];
    const off = readConfig([...base, '--console-listen', 'off'], {});
    expect(off.ok === true && off.config.consoleListen).toBeUndefined();
    const env = readConfig(base, { ACL_CONSOLE_LISTEN: '127.0.0.1:9999' });
    expect(env.ok === true && env.config.consoleListen).toEqual({ host: '127.0.0.1', port: 9999 });
    const bad = readConfig([...base, '--console-listen', 'nowhere:port'], {});
    expect(bad.ok === false && bad.message).toMatch(/^--console-listen: /);
  });

  it('takes flags first, then ACL_* environment variables, then defaults', () => {
    const r = readConfig(['--manifests', 'm', '--insecure-http', '--listen', '127.0.0.1:1'], {
      ACL_LISTEN: '0.0.0.0:2',
      ACL_OPS_LISTEN: ':3',
      ACL_LOG_LEVEL: 'debug',
      ACL_STATE_DIR: 's',
    });
    expect(r).toEqual({
      ok: true,
      config: {
        manifests: 'm',
        stateDir: 's',
        listen: { host: '127.0.0.1', port: 1 },
        opsListen: { host: '0.0.0.0', port: 3 },
        consoleListen: { host: '127.0.0.1', port: 8080 },
        opa: undefined,
        tls: { mode: 'insecure' },
        publicUrl: undefined,
        maxBodyBytes: 1048576,
        maxLongPollSeconds: 120,
        logLevel: 'debug',
        logFormat: 'auto',
        ...DEFAULT_FLEET,
        unsignedBundles: false,
        kube: DEFAULT_KUBE,
        folder: DEFAULT_FOLDER,
      },
    });
  });

  it('reads --log-format from the flag, then ACL_LOG_FORMAT; auto when neither says', () => {
    const base = ['--manifests', 'm', '--insecure-http'];
    const format = (argv: string[], env: NodeJS.ProcessEnv): unknown => {
      const r = readConfig([...base, ...argv], env);
      return r.ok === true ? r.config.logFormat : r;
    };
    expect(format([], {})).toBe('auto');
    expect(format([], { ACL_LOG_FORMAT: 'pretty' })).toBe('pretty');
    expect(format(['--log-format', 'json'], { ACL_LOG_FORMAT: 'pretty' })).toBe('json');
  });

  it('reads how the manifests folder is read: settle interval, rescans and limits', () => {
    const folder = (argv: string[], env: Record<string, string> = {}) => {
      const c = readConfig(['--manifests', 'm', '--insecure-http', ...argv], env);
      return c.ok === true ? c.config.folder : c;
    };
    expect(folder(['--settle-ms', '0', '--max-manifest-bytes', '65536'], { ACL_MAX_MANIFEST_DOCUMENTS: '10' })).toEqual({
      settleMs: 0,
      rescanSeconds: 10,
      maxManifestBytes: 65536,
      maxManifestDocuments: 10,
    });
    expect(folder([], { ACL_RESCAN_SECONDS: '0' })).toMatchObject({ rescanSeconds: 0 });
    expect(folder(['--rescan-seconds', '90000'])).toMatchObject({
      ok: false,
      message: expect.stringContaining('--rescan-seconds (ACL_RESCAN_SECONDS)'),
    });
    expect(folder(['--settle-ms', '90000'])).toMatchObject({ ok: false, message: expect.stringContaining('--settle-ms (ACL_SETTLE_MS)') });
    expect(folder(['--max-manifest-bytes', '10'])).toMatchObject({
      ok: false,
      message: expect.stringContaining('--max-manifest-bytes (ACL_MAX_MANIFEST_BYTES)'),
    });
  });

  it('reads where decision lines go, and the bounds of the OPA fleet', () => {
    const r = (argv: string[], env: Record<string, string> = {}) => readConfig(['--manifests', 'm', '--insecure-http', ...argv], env);
    const fleet = (argv: string[], env: Record<string, string> = {}) => {
      const c = r(argv, env);
      return c.ok === true
        ? {
            decisionLog: c.config.decisionLog,
            agentExpirySeconds: c.config.agentExpirySeconds,
            maxAgents: c.config.maxAgents,
            maxUploadBytes: c.config.maxUploadBytes,
          }
        : c;
    };
    expect(fleet([])).toEqual(DEFAULT_FLEET);
    expect(fleet(['--decision-log', 'stdout'])).toMatchObject({ decisionLog: { kind: 'stdout' } });
    expect(fleet(['--decision-log', '-'])).toMatchObject({ decisionLog: { kind: 'stdout' } });
    expect(fleet([], { ACL_DECISION_LOG: '/var/log/acl/decisions.log' })).toMatchObject({
      decisionLog: { kind: 'file', path: '/var/log/acl/decisions.log' },
    });
    expect(fleet(['--decision-log', 'off'], { ACL_DECISION_LOG: 'stdout' })).toMatchObject({ decisionLog: { kind: 'off' } });
    expect(fleet(['--agent-expiry-seconds', '60', '--max-agents', '500', '--max-upload-bytes', '1048576'])).toMatchObject({
      agentExpirySeconds: 60,
      maxAgents: 500,
      maxUploadBytes: 1048576,
    });
    expect(r(['--agent-expiry-seconds', '5'])).toMatchObject({
      ok: false,
      message: expect.stringContaining('--agent-expiry-seconds (ACL_AGENT_EXPIRY_SECONDS)'),
    });
    expect(r(['--max-agents', '0'])).toMatchObject({ ok: false, message: expect.stringContaining('--max-agents (ACL_MAX_AGENTS)') });
    expect(r(['--max-upload-bytes', '1000'])).toMatchObject({
      ok: false,
      message: expect.stringContaining('--max-upload-bytes (ACL_MAX_UPLOAD_BYTES)'),
    });
  });

  it('names the Service in Kubernetes when --public-url is not given', () => {
    expect(kubePublicUrl('acl-operator', 'acl-system', 8443)).toBe('https://acl-operator.acl-system.svc:8443');
    expect(kubePublicUrl('authz', 'ops', 443)).toBe('https://authz.ops.svc');
    expect(kubePublicUrl('acl-operator', 'acl-system', 0)).toBeUndefined();
  });

  it('takes --public-url as scheme, host and port, and says what is wrong with any other URL', () => {
    const ok = (argv: string[], env: Record<string, string> = {}): unknown => {
      const r = readConfig(['--manifests', 'm', '--tls-self-signed', ...argv], env);
      return r.ok === true ? r.config.publicUrl : r;
    };
    expect(ok([])).toBeUndefined();
    expect(ok(['--public-url', 'https://pdp.example.com/'])).toBe('https://pdp.example.com');
    expect(ok([], { ACL_PUBLIC_URL: 'https://PDP.example.com:8443' })).toBe('https://pdp.example.com:8443');
    expect(ok(['--public-url', 'http://pdp.example.com'])).toEqual({
      ok: false,
      message: '--public-url (ACL_PUBLIC_URL): must be an https URL, got http:',
    });
    expect(ok(['--public-url', 'pdp.example.com'])).toEqual({
      ok: false,
      message: '--public-url (ACL_PUBLIC_URL): "pdp.example.com" is not an absolute URL',
    });
    expect(ok(['--public-url', 'https://pdp.example.com/?x=1'])).toEqual({
      ok: false,
      message: '--public-url (ACL_PUBLIC_URL): must not have a query or a fragment',
    });
    expect(ok(['--public-url', 'https://u:p@pdp.example.com'])).toEqual({
      ok: false,
      message: '--public-url (ACL_PUBLIC_URL): must not carry credentials',
    });
    expect(ok(['--public-url', 'https://pdp.example.com/authz'])).toMatchObject({
      ok: false,
      message: expect.stringContaining('must be scheme, host and port only (no path such as "/authz")'),
    });
    const plain = readConfig(['--manifests', 'm', '--insecure-http', '--public-url', 'http://127.0.0.1:8080'], {});
    expect(plain.ok === true ? plain.config.publicUrl : plain).toBe('http://127.0.0.1:8080');
  });

  it('reads the Kubernetes settings from flags and ACL_* variables', () => {
    const r = readConfig(['--tls-secret', 'acl-tls', '--namespaces', ' b, a,b ', '--operator-namespace', 'ops'], {
      ACL_KUBECONFIG: '/k',
      ACL_IDENTITY: 'pod-1',
      ACL_RESYNC_SECONDS: '60',
      ACL_SERVICE_NAME: 'acl',
    });
    expect(r).toMatchObject({
      ok: true,
      config: {
        manifests: undefined,
        tls: { mode: 'secret', name: 'acl-tls' },
        kube: {
          kubeconfig: '/k',
          namespaces: ['a', 'b'],
          operatorNamespace: 'ops',
          serviceName: 'acl',
          identity: 'pod-1',
          resyncSeconds: 60,
        },
      },
    });
  });

  it('reads booleans and numbers from the environment', () => {
    const r = readConfig([], { ACL_TLS_SELF_SIGNED: 'true', ACL_MAX_BODY_BYTES: '2048', ACL_MAX_LONG_POLL_SECONDS: '30' });
    expect(r).toMatchObject({
      ok: true,
      config: { manifests: undefined, tls: { mode: 'self-signed' }, maxBodyBytes: 2048, maxLongPollSeconds: 30 },
    });
  });

  it('takes a certificate and key pair', () => {
    expect(readConfig(['--tls-cert', 'c.pem', '--tls-key', 'k.pem'], {})).toMatchObject({
      ok: true,
      config: { tls: { mode: 'files', cert: 'c.pem', key: 'k.pem' } },
    });
  });

  it.each([
    [[], /needs TLS/],
    [['--insecure-http', '--tls-self-signed'], /choose one of/],
    [['--tls-cert', 'c.pem'], /go together/],
    [['--insecure-http', '--listen', 'nowhere'], /--listen: "nowhere" is not host:port/],
    [['--insecure-http', '--log-level', 'loud'], /--log-level \(ACL_LOG_LEVEL\)/],
    [['--insecure-http', '--log-format', 'text'], /--log-format \(ACL_LOG_FORMAT\)/],
    [['--insecure-http', '--max-body-bytes', '10'], /--max-body-bytes/],
    [['--unknown'], /Unknown option '--unknown'/],
    [['--tls-secret', 'Bad_Name'], /--tls-secret \(ACL_TLS_SECRET\)/],
    [['--manifests', 'm', '--tls-secret', 'tls'], /--tls-secret is for Kubernetes mode/],
    [['--insecure-http', '--namespaces', 'a,B'], /"B" is not a namespace name/],
    [['--insecure-http', '--resync-seconds', '1'], /--resync-seconds/],
    [
      ['--insecure-http', '--webhook-config', 'acl-operator'],
      /--webhook-config \(ACL_WEBHOOK_CONFIG\): the caBundle kept is the CA of --tls-secret/,
    ],
    [
      ['--manifests', 'm', '--insecure-http', '--webhook-config', 'acl-operator'],
      /--webhook-config \(ACL_WEBHOOK_CONFIG\) is for Kubernetes mode/,
    ],
    [['--tls-secret', 'tls', '--webhook-config', 'Not A Name'], /--webhook-config \(ACL_WEBHOOK_CONFIG\)/],
  ])('refuses %j with a message saying what to do', (argv, message) => {
    const r = readConfig(argv, {});
    expect(r.ok).toBe(false);
    expect(r.ok === false ? r.message : '').toMatch(message);
  });

  it('names the webhook configuration to keep, and none when the value is empty', () => {
    const named = (argv: string[], env: Record<string, string> = {}) => {
      const r = readConfig(['--tls-secret', 'acl-tls', ...argv], env);
      return r.ok === true ? r.config.kube.webhookConfiguration : r;
    };
    expect(named(['--webhook-config', 'acl-operator'])).toBe('acl-operator');
    expect(named([], { ACL_WEBHOOK_CONFIG: 'acl-operator' })).toBe('acl-operator');
    expect(named(['--webhook-config', ''], { ACL_WEBHOOK_CONFIG: 'acl-operator' })).toBeUndefined();
    expect(named([])).toBeUndefined();
  });

  it('asks for help', () => {
    expect(readConfig(['-h'], {})).toEqual({ ok: 'help' });
  });

  it('takes the Pod and KUBECONFIG from the environment as they are, for the operator', () => {
    const kube = (env: Record<string, string>) => {
      const r = readConfig(['--tls-secret', 'acl-tls'], env);
      return r.ok === true ? { pod: r.config.kube.pod, kubeconfigVariable: r.config.kube.kubeconfigVariable } : r;
    };
    expect(kube({ POD_NAMESPACE: 'acl-system', POD_NAME: 'acl-0', POD_UID: 'u-1', KUBECONFIG: '/a:/b' })).toEqual({
      pod: { namespace: 'acl-system', name: 'acl-0', uid: 'u-1' },
      kubeconfigVariable: '/a:/b',
    });
    expect(kube({ POD_NAME: '' })).toEqual({ pod: { name: '' }, kubeconfigVariable: undefined });
    expect(kube({})).toEqual({ pod: DEFAULT_KUBE.pod, kubeconfigVariable: DEFAULT_KUBE.kubeconfigVariable });
  });
});

describe('commandDefaults', () => {
  it('gives status its state folder and render its manifests from the environment', () => {
    expect(commandDefaults({})).toEqual({ stateDir: '.acl-state', manifests: undefined });
    expect(commandDefaults({ ACL_STATE_DIR: '/var/lib/acl', ACL_MANIFESTS: 'deploy/examples' })).toEqual({
      stateDir: '/var/lib/acl',
      manifests: 'deploy/examples',
    });
    // As before the table: only serve reads an empty variable as unset.
    expect(commandDefaults({ ACL_STATE_DIR: '' })).toEqual({ stateDir: '', manifests: undefined });
  });
});

describe('SERVE_USAGE', () => {
  it('lists every flag with its variable and default, under the mode it applies to', () => {
    expect(SERVE_USAGE).toMatchInlineSnapshot(`
      "Usage: acl-operator [serve] [options]

      Runs the service: POST /authorization and the OPA bundle endpoint on the API listener, metrics and
      health on the ops listener. With --manifests it runs standalone on a folder of YAML manifests;
      without it, as the Kubernetes operator: it watches Rules, Connectors, Bundles and labelled Secrets
      through the API server (in-cluster credentials, or KUBECONFIG / --kubeconfig).

      Options (environment variable in brackets):
        --manifests <dir>            Folder of Rule, Connector, Bundle and API key Secret manifests, read
                                     recursively and watched [ACL_MANIFESTS]
        --state-dir <dir>            Where tokens, generations, revisions and status are kept
                                     (default .acl-state) [ACL_STATE_DIR]
        --listen <host:port>         API listener (default 0.0.0.0:8443) [ACL_LISTEN]
        --ops-listen <host:port>     Metrics and health listener, plain HTTP (default 0.0.0.0:9090) [ACL_OPS_LISTEN]
        --tls-cert <file>            PEM certificate of the API listener; reloaded when it changes [ACL_TLS_CERT]
        --tls-key <file>             PEM private key of the API listener [ACL_TLS_KEY]
        --tls-self-signed            Generate (once) a self-signed certificate for localhost in
                                     <state-dir>/tls and serve HTTPS with it [ACL_TLS_SELF_SIGNED=true]
        --insecure-http              Serve the API over plain HTTP (local use only) [ACL_INSECURE_HTTP=true]
        --unsigned-bundles           Serve bundles without .signatures.json, for an OPA older than 0.61
                                     (default: every bundle is signed, docs/opa.md "Signed bundles") [ACL_UNSIGNED_BUNDLES=true]
        --public-url <url>           Base URL clients reach the API at: the AuthZEN PDP identifier and the
                                     base of the endpoints in /.well-known/authzen-configuration (default:
                                     the API listener's URL; in Kubernetes https://<service>.<namespace>.svc:<port>)
                                     [ACL_PUBLIC_URL]
        --max-body-bytes <n>         Largest decision request body (default 1048576) [ACL_MAX_BODY_BYTES]
        --max-long-poll-seconds <n>  Longest a bundle request is held for Prefer: wait=N (default 120)
                                     [ACL_MAX_LONG_POLL_SECONDS]
        --log-level <level>          fatal, error, warn, info, debug, trace or silent (default info) [ACL_LOG_LEVEL]
        --log-format <format>        Log lines: json, pretty (one line a person reads per event), or auto
                                     (default): pretty on a terminal, json otherwise [ACL_LOG_FORMAT]
        --console-listen <host:port> The console (docs/console.md), plain HTTP on loopback by default
                                     (default 127.0.0.1:8080); off turns it off [ACL_CONSOLE_LISTEN]
        --opa <binary>               An OPA binary the console's playground also decides with (default: none) [ACL_OPA]
        --decision-log <where>       One JSON line per decision, OPA's (from their decision-log uploads) and
                                     the service's own: off (default), stdout, or a file path (appended,
                                     created 0600; SIGHUP reopens it) [ACL_DECISION_LOG]
        --agent-expiry-seconds <n>   An OPA that has not reported its status for this long is forgotten
                                     (default 300) [ACL_AGENT_EXPIRY_SECONDS]
        --max-agents <n>             OPA agents remembered at most, over all bundles (default 10000) [ACL_MAX_AGENTS]
        --max-upload-bytes <n>       Largest OPA status report or decision-log upload, received and after
                                     gunzip (default 4194304) [ACL_MAX_UPLOAD_BYTES]

      Standalone mode only:
        --settle-ms <n>              A changed manifest file is used once its bytes held still this long
                                     (default 300; 0 uses it when first read) [ACL_SETTLE_MS]
        --rescan-seconds <n>         The manifests folder is read again this often even when its watch
                                     told no change (default 10; 0: never) [ACL_RESCAN_SECONDS]
        --max-manifest-bytes <n>     Largest manifest file read; a larger one is a problem and its objects
                                     stay as they were (default 8388608) [ACL_MAX_MANIFEST_BYTES]
        --max-manifest-documents <n> Most YAML documents in one manifest file (default 20000)
                                     [ACL_MAX_MANIFEST_DOCUMENTS]

      Kubernetes mode only:
        --tls-secret <name>          kubernetes.io/tls Secret in the operator's namespace for the API
                                     listener: created with a self-signed certificate for the Service
                                     when missing, reloaded when it changes (e.g. cert-manager) [ACL_TLS_SECRET]
        --signing-key-secret <name>  Secret in the operator's namespace holding the bundle signing key
                                     (tls.key, and previous.key during a rotation): created with a new
                                     RSA key when missing (default acl-signing-key) [ACL_SIGNING_KEY_SECRET]
        --kubeconfig <file>          Kubeconfig to use (default: KUBECONFIG, then in-cluster) [ACL_KUBECONFIG]
        --namespaces <a,b>           Watch only these tenant namespaces (default: all) [ACL_NAMESPACES]
        --operator-namespace <ns>    Namespace of the leader Lease and the TLS Secret (default: POD_NAMESPACE,
                                     then the service account's namespace, then acl-system) [ACL_OPERATOR_NAMESPACE]
        --service-name <name>        Service name the generated certificate is for (default acl-operator) [ACL_SERVICE_NAME]
        --webhook-config <name>      ValidatingWebhookConfiguration whose caBundle the leader keeps equal to
                                     the CA of --tls-secret (default: none; left alone when annotated
                                     cert-manager.io/inject-ca-from) [ACL_WEBHOOK_CONFIG]
        --identity <id>              This replica's name in the Lease (default: POD_NAME, then host-pid) [ACL_IDENTITY]
        --resync-seconds <n>         Every n seconds every object is reconciled again (default 300) [ACL_RESYNC_SECONDS]
        -h, --help                   Show this help
      "
    `);
  });
});

describe('parseAddress', () => {
  it.each([
    ['0.0.0.0:8443', { host: '0.0.0.0', port: 8443 }],
    [':9090', { host: '0.0.0.0', port: 9090 }],
    ['8443', { host: '0.0.0.0', port: 8443 }],
    ['[::1]:8443', { host: '::1', port: 8443 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
  ])('reads %s', (text, address) => {
    expect(parseAddress(text)).toEqual(address);
  });

  it.each(['', 'host:', 'host:99999', 'a:b:c'])('refuses %j', (text) => {
    expect(typeof parseAddress(text)).toBe('string');
  });
});
