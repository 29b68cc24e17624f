// The validating admission webhook on a real API server, called by it over TLS on 127.0.0.1: the
// operator fills the configuration's caBundle (and follows a renewal), `kubectl apply` of an invalid
// Rule, Bundle, Connector or Directory is refused with the message its status would show, valid ones
// are admitted with warnings kubectl prints, and with the operator stopped apply still succeeds
// (failurePolicy Ignore) while a later operator marks the objects Invalid with the same message.
//
// The configuration is deploy/60-webhook.yaml's, with a URL instead of the Service and a
// namespaceSelector on this test's namespace alone: the other e2e tests create invalid objects on
// purpose and must never meet it. It is deleted after the test.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdmissionregistrationV1Api, type KubernetesObject, type V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { expect, it } from 'vitest';
import { clientsFor, statusOf, type CustomKind } from '../../src/kube/index.ts';
import { createLogger } from '../../src/log.ts';
import { startOperator, type Operator } from '../../src/modes/index.ts';
import { selfSignedCertificate } from '../../src/tls/index.ts';
import {
  adminClients,
  bundleYaml,
  connectorYaml,
  directoryYaml,
  E2E_KUBECONFIG,
  GROUP,
  loadConfig,
  operatorConfig,
  ROOT,
  ruleYaml,
  TEAM_RULE,
  VERSION,
  waitFor,
  yamlObjects,
} from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

/** The kubectl a user would run: KUBECTL, else the one on PATH. */
const KUBECTL = process.env['KUBECTL'] || 'kubectl';
const PATH = '/admission/validate';
const TLS_SECRET = 'acl-operator-tls';
/** The label that puts a namespace under this test's webhook. */
const SELECTOR_LABEL = 'acl-e2e-webhook';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** The real kubectl, objects as YAML on stdin. */
function kubectl(args: readonly string[], objects?: readonly KubernetesObject[]): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const p = spawn(KUBECTL, ['--kubeconfig', E2E_KUBECONFIG as string, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    p.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    p.on('error', (err) => reject(new Error(`cannot run ${KUBECTL} (set KUBECTL to its path): ${err.message}`)));
    p.on('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
    p.stdin.end(objects ? objects.map((o) => stringify(o)).join('---\n') : '');
  });
}

/** kubectl's lines of its own, without the version-skew warning this client prints against a 1.20 server. */
function printed(run: Run): string {
  return `${run.stdout}${run.stderr}`
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('WARNING: version difference'))
    .join('\n');
}

/** What the webhook said in a refusal kubectl printed. */
function deniedWith(run: Run): string | undefined {
  return /admission webhook "validate\.acl\.policyagent\.dev" denied the request: (.*)$/m.exec(run.stderr)?.[1];
}

function admissionApi(): AdmissionregistrationV1Api {
  return loadConfig().makeApiClient(AdmissionregistrationV1Api);
}

/** deploy/60-webhook.yaml's configuration, named `name`, calling `url`, for namespace `ns` only. */
function testConfiguration(name: string, ns: string, url: string): V1ValidatingWebhookConfiguration {
  const shipped = yamlObjects(readFileSync(join(ROOT, 'deploy', '60-webhook.yaml'), 'utf8')).find(
    (o) => o.kind === 'ValidatingWebhookConfiguration',
  ) as V1ValidatingWebhookConfiguration | undefined;
  if (!shipped?.webhooks) throw new Error('deploy/60-webhook.yaml has no ValidatingWebhookConfiguration');
  return {
    ...shipped,
    metadata: { name, labels: { 'acl-operator-e2e': 'true' } },
    webhooks: shipped.webhooks.map((w) => ({
      ...w,
      namespaceSelector: { matchLabels: { [SELECTOR_LABEL]: ns } },
      clientConfig: { url },
    })),
  };
}

async function setUrl(name: string, url: string): Promise<void> {
  await admissionApi().patchValidatingWebhookConfiguration({
    name,
    body: [{ op: 'replace', path: '/webhooks/0/clientConfig/url', value: url }],
  });
}

async function caBundleOf(name: string): Promise<string | undefined> {
  const c = await admissionApi().readValidatingWebhookConfiguration({ name });
  return c.webhooks?.[0]?.clientConfig.caBundle;
}

/** The CA the operator serves with, as its TLS Secret holds it, base64 (the caBundle's form). */
async function servingCa(ns: string): Promise<string> {
  const s = await adminClients().core.readNamespacedSecret({ name: TLS_SECRET, namespace: ns });
  const ca = s.data?.['ca.crt'];
  if (!ca) throw new Error('the TLS Secret has no ca.crt');
  return ca;
}

/** Whether the API server now sends this namespace's Rules to a webhook that answers (a dry run: nothing is stored). */
async function refusesNow(ns: string): Promise<boolean> {
  try {
    await adminClients().custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'rules',
      body: ruleYaml(ns, 'probe', { ...TEAM_RULE, condition: 'principal.team ==' }),
      dryRun: 'All',
    });
    return false;
  } catch (err) {
    return String((err as { body?: unknown }).body ?? err).includes('denied the request');
  }
}

async function startWebhookOperator(ns: string, configuration: string, identity: string): Promise<Operator> {
  const base = operatorConfig(ns, identity, { tls: { mode: 'secret', name: TLS_SECRET } });
  return startOperator(
    { ...base, kube: { ...base.kube, webhookConfiguration: configuration, resyncSeconds: 2 } },
    {
      clients: clientsFor(loadConfig()),
      log: createLogger((process.env['E2E_LOG_LEVEL'] as 'info' | undefined) ?? 'silent'),
      leaseSeconds: 3,
      renewMs: 500,
      retryMs: 200,
      tlsRefreshMs: 500,
    },
  );
}

/** Invalid by their own spec alone (each passes the CRD's OpenAPI schema, so only the webhook can refuse it). */
function invalidObjects(ns: string): KubernetesObject[] {
  return [
    ruleYaml(ns, 'broken', { ...TEAM_RULE, condition: 'principal.team == ' }),
    ruleYaml(ns, 'outside-subset', { ...TEAM_RULE, condition: 'principal.name.matches("^a")' }),
    bundleYaml(ns, 'docs.v2', { connector: 'gateways' }),
    connectorYaml(ns, 'gateways.v2'),
    directoryYaml(ns, 'twice', {
      entities: [
        { type: 'user', id: 'alice' },
        { type: 'user', id: 'alice' },
      ],
    }),
    directoryYaml(ns, 'own-type', { entities: [{ type: 'user', id: 'bob', properties: { type: 'admin' } }] }),
    directoryYaml(ns, 'big-number', { entities: [{ type: 'user', id: 'carol', properties: { count: 2 ** 60 } }] }),
  ];
}

function validObjects(ns: string): KubernetesObject[] {
  return [
    connectorYaml(ns, 'gateways'),
    bundleYaml(ns, 'docs', { connector: 'gateways' }),
    ruleYaml(ns, 'team', TEAM_RULE),
    // Legal, but it reads the request's shape: properties are flattened (lint code PropertiesPath).
    ruleYaml(ns, 'owners', { ...TEAM_RULE, actions: ['delete'], condition: 'resource.properties.owner == principal.id' }),
    directoryYaml(ns, 'people', { entities: [{ type: 'user', id: 'alice', properties: { team: 'blue' } }] }),
  ];
}

const readyMessage = (status: Record<string, unknown>): string | undefined =>
  (status['conditions'] as { type: string; message?: string }[] | undefined)?.find((c) => c.type === 'Ready')?.message;

describeE2E('Kubernetes: the admission webhook (real API server)', { timeout: 180_000 }, (e2e) => {
  async function setup(prefix: string) {
    const t = await e2e.tenant(prefix);
    await adminClients().core.patchNamespace({
      name: t.ns,
      body: [{ op: 'add', path: `/metadata/labels/${SELECTOR_LABEL}`, value: t.ns }],
    });
    const configuration = `acl-e2e-${t.ns}`;
    // Nothing listens on port 1: until the operator's URL is set, the webhook fails open.
    await admissionApi().createValidatingWebhookConfiguration({
      body: testConfiguration(configuration, t.ns, `https://127.0.0.1:1${PATH}`),
    });
    e2e.later(async () => {
      try {
        await admissionApi().deleteValidatingWebhookConfiguration({ name: configuration });
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
      }
    });
    return { ...t, configuration };
  }

  it('refuses invalid objects with their status message, admits valid ones with warnings, and fails open when the operator is down', async () => {
    const { ns, api, configuration } = await setup('webhook');
    const first = await e2e.operator(startWebhookOperator(ns, configuration, 'a'));

    // The leader writes the CA it serves with into the caBundle.
    const ca = await servingCa(ns);
    await waitFor('the caBundle filled by the operator', async () => (await caBundleOf(configuration)) === ca);
    await setUrl(configuration, `${first.apiUrl}${PATH}`);
    await waitFor('the API server calling the webhook', () => refusesNow(ns));

    // Invalid objects: refused at once, nothing stored.
    const refusals = new Map<string, string>();
    for (const o of invalidObjects(ns)) {
      const run = await kubectl(['apply', '-f', '-'], [o]);
      console.log(`$ kubectl apply -f ${(o.kind ?? '').toLowerCase()}.yaml   # ${o.metadata?.name}\n${printed(run)}\n(exit ${run.code})`);
      expect(run.code).toBe(1);
      const message = deniedWith(run);
      expect(message, run.stderr).toBeDefined();
      refusals.set(`${o.kind}/${o.metadata?.name}`, message ?? '');
      expect(await api.status(o.kind as CustomKind, o.metadata?.name ?? '')).toEqual({});
      await expect(api.get(o.kind as CustomKind, o.metadata?.name ?? '')).rejects.toSatisfy((err: unknown) => statusOf(err) === 404);
    }
    expect(refusals.get('Rule/broken')).toBe('syntax error at line 1, column 16: found = but expecting end of input');
    expect(refusals.get('Bundle/docs.v2')).toMatch(/^metadata\.name: must be lowercase letters, digits and hyphens/);
    expect(refusals.get('Directory/twice')).toBe('spec.entities.1: user "alice" is already listed at entities.0');

    // Valid objects: admitted, with the warnings kubectl prints.
    const admitted = await kubectl(['apply', '-f', '-'], validObjects(ns));
    console.log(`$ kubectl apply -f tenant.yaml\n${printed(admitted)}\n(exit ${admitted.code})`);
    expect(admitted.code).toBe(0);
    expect(admitted.stderr).toContain(
      "Warning: PropertiesPath: the condition reads resource.properties.owner, but a request's resource.properties are flattened into resource",
    );
    expect(admitted.stderr).not.toMatch(/Warning: .*Rule team/);
    await waitFor('rule Enforced', async () => (await api.status('Rule', 'team'))['phase'] === 'Enforced');

    // An invalid edit of a stored object is refused too, and the stored version stays.
    const edit = await kubectl(['apply', '-f', '-'], [ruleYaml(ns, 'team', { ...TEAM_RULE, condition: 'principal.team ==' })]);
    console.log(`$ kubectl apply -f team-edited.yaml\n${printed(edit)}\n(exit ${edit.code})`);
    expect(edit.code).toBe(1);
    expect(deniedWith(edit)).toMatch(/^syntax error at line 1, column 16/);
    expect(((await api.get('Rule', 'team'))['spec'] as { condition: string }).condition).toBe(TEAM_RULE.condition);

    // The operator stops: its listener closes, and apply succeeds at once (failurePolicy Ignore).
    await first.stop();
    for (const o of invalidObjects(ns)) {
      const run = await kubectl(['apply', '-f', '-'], [o]);
      console.log(
        `$ kubectl apply -f ${(o.kind ?? '').toLowerCase()}.yaml   # operator stopped, ${run.ms} ms\n${printed(run)}\n(exit ${run.code})`,
      );
      expect(run.code, run.stderr).toBe(0);
      // Well within the webhook's timeoutSeconds (5 s) plus kubectl's own start.
      expect(run.ms).toBeLessThan(10_000);
    }

    // A later operator marks each one Invalid, with the message the webhook refused it with.
    const second = await e2e.operator(startWebhookOperator(ns, configuration, 'b'));
    for (const [key, refused] of refusals) {
      const [kind, name] = key.split('/') as [CustomKind, string];
      const status = await waitFor(`${key} Invalid`, async () => {
        const s = await api.status(kind, name);
        return s['phase'] === 'Invalid' ? s : undefined;
      });
      const inEffect = kind === 'Directory' ? '; none of its entities are in effect' : '';
      expect(readyMessage(status)).toBe(`${refused}${inEffect}`);
    }

    // With the webhook answering again, an object stored invalid can still be labelled (its spec is
    // untouched; refusing would not make it valid), but a new spec for it is judged.
    await setUrl(configuration, `${second.apiUrl}${PATH}`);
    await waitFor('the API server calling the second operator', () => refusesNow(ns));
    const labelled = await kubectl(['label', '-n', ns, 'rule/broken', 'team=blue']);
    expect(labelled.code, labelled.stderr).toBe(0);
    const reedit = await kubectl(['apply', '-f', '-'], [ruleYaml(ns, 'broken', { ...TEAM_RULE, condition: 'principal.team === 1' })]);
    expect(reedit.code).toBe(1);
    expect(deniedWith(reedit)).toMatch(/^syntax error at line 1, column 16: found = but expecting/);
  });

  it('keeps the caBundle equal to the serving CA: after a renewal, and after a hand edit', async () => {
    const { ns, configuration } = await setup('webhook-ca');
    const op = await e2e.operator(startWebhookOperator(ns, configuration, 'a'));
    await waitFor('the caBundle filled', async () => (await caBundleOf(configuration)) === (await servingCa(ns)));
    await setUrl(configuration, `${op.apiUrl}${PATH}`);
    await waitFor('the API server calling the webhook', () => refusesNow(ns));

    // A new certificate (another CA) in the TLS Secret, as cert-manager or a renewal would write it.
    const pems = await selfSignedCertificate({
      commonName: `acl-operator.${ns}.svc`,
      organization: 'acl-operator e2e renewal',
      dnsNames: ['acl-operator', 'localhost'],
      ips: ['127.0.0.1'],
      now: new Date(),
    });
    const b64 = (t: string): string => Buffer.from(t).toString('base64');
    const { core } = adminClients();
    const secret = await core.readNamespacedSecret({ name: TLS_SECRET, namespace: ns });
    await core.replaceNamespacedSecret({
      name: TLS_SECRET,
      namespace: ns,
      body: { ...secret, data: { 'tls.crt': b64(pems.cert), 'tls.key': b64(pems.private), 'ca.crt': b64(pems.cert) } },
    });
    await waitFor('the caBundle following the new CA', async () => (await caBundleOf(configuration)) === b64(pems.cert));
    // The API server trusts the new certificate through the new bundle: refusals go on.
    await waitFor('the API server calling the webhook with the new CA', () => refusesNow(ns));

    // A hand edit (or a re-apply of an older copy) is repaired at the next resync.
    await admissionApi().patchValidatingWebhookConfiguration({
      name: configuration,
      body: [{ op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: b64('not a certificate') }],
    });
    await waitFor('the caBundle repaired', async () => (await caBundleOf(configuration)) === b64(pems.cert));
  });
});
