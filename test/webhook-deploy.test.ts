// deploy/'s admission webhook agrees with the code and with itself: the resources it reviews are our
// CRDs (never their status), the path and Service are the operator's, the Deployment keeps the
// caBundle of the configuration RBAC lets it patch, and the cert-manager variant differs only by its
// annotation. The real API server runs the same configuration in test/e2e/webhook.test.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { KINDS } from '../src/api/index.ts';
import { ADMISSION_PATH } from '../src/http/admission.ts';

const DEPLOY = join(import.meta.dirname, '..', 'deploy');

type Doc = Record<string, unknown> & { kind: string; metadata: { name: string; annotations?: Record<string, string> } };

function docs(file: string): Doc[] {
  return parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8')).map((d) => d.toJS() as Doc);
}

function one(file: string, kind: string): Doc {
  const found = docs(file).filter((d) => d.kind === kind);
  expect(found, `${file} has one ${kind}`).toHaveLength(1);
  return found[0] as Doc;
}

interface Webhook {
  name: string;
  failurePolicy: string;
  sideEffects: string;
  admissionReviewVersions: string[];
  timeoutSeconds: number;
  rules: { apiGroups: string[]; resources: string[]; operations: string[] }[];
  clientConfig: { service: { namespace: string; name: string; path: string; port: number } };
}

const configuration = one('60-webhook.yaml', 'ValidatingWebhookConfiguration');
const webhooks = configuration['webhooks'] as Webhook[];

describe("deploy/'s admission webhook", () => {
  it('reviews CREATE and UPDATE of our four kinds, never their status, and fails open within 5 s', () => {
    expect(webhooks).toHaveLength(1);
    const [w] = webhooks as [Webhook];
    expect(w.rules).toEqual([
      expect.objectContaining({ apiGroups: ['acl.policyagent.dev'], operations: ['CREATE', 'UPDATE'], resources: expect.any(Array) }),
    ]);
    expect([...(w.rules[0]?.resources ?? [])].sort()).toEqual(KINDS.map((k) => k.plural).sort());
    expect(w).toMatchObject({ failurePolicy: 'Ignore', sideEffects: 'None', admissionReviewVersions: ['v1'] });
    expect(w.timeoutSeconds).toBeLessThanOrEqual(5);
  });

  it("calls the operator's Service on its HTTPS port, at the route's path", () => {
    const service = one('40-service.yaml', 'Service') as Doc & {
      metadata: { namespace: string };
      spec: { ports: { name: string; port: number }[] };
    };
    const https = service.spec.ports.find((p) => p.name === 'https');
    expect(webhooks[0]?.clientConfig.service).toEqual({
      namespace: service.metadata.namespace,
      name: service.metadata.name,
      path: ADMISSION_PATH,
      port: https?.port,
    });
  });

  it('has the leader keep the caBundle of this configuration, which RBAC lets it read and patch and nothing else', () => {
    const deployment = one('30-deployment.yaml', 'Deployment') as Doc & {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    const args = deployment.spec.template.spec.containers[0]?.args ?? [];
    expect(args[args.indexOf('--webhook-config') + 1]).toBe(configuration.metadata.name);
    const role = one('60-webhook.yaml', 'ClusterRole') as Doc & { rules: Record<string, unknown>[] };
    expect(role.rules).toEqual([
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        resourceNames: [configuration.metadata.name],
        verbs: ['get', 'patch'],
      },
    ]);
    const binding = one('60-webhook.yaml', 'ClusterRoleBinding') as Doc & { roleRef: { name: string }; subjects: unknown[] };
    expect(binding.roleRef.name).toBe(role.metadata.name);
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'acl-operator', namespace: 'acl-system' }]);
  });

  it("has cert-manager's variant differ only by the inject-ca-from annotation, naming the serving Certificate", () => {
    const injected = one(join('cert-manager', 'webhook.yaml'), 'ValidatingWebhookConfiguration');
    const { annotations, ...metadata } = injected.metadata;
    expect({ ...injected, metadata }).toEqual(configuration);
    const certificate = docs(join('cert-manager', 'certificate.yaml')).find(
      (d) => d.kind === 'Certificate' && (d['spec'] as { secretName?: string }).secretName === 'acl-operator-tls',
    ) as (Doc & { metadata: { namespace: string } }) | undefined;
    expect(annotations).toEqual({ 'cert-manager.io/inject-ca-from': `${certificate?.metadata.namespace}/${certificate?.metadata.name}` });
  });

  it('is in the Kustomization with every other file of deploy/', () => {
    const kustomization = parseAllDocuments(readFileSync(join(DEPLOY, 'Kustomization'), 'utf8'))[0]?.toJS() as { resources: string[] };
    const files = readdirSync(DEPLOY).filter((f) => f.endsWith('.yaml'));
    expect(kustomization.resources.filter((r) => r.endsWith('.yaml')).sort()).toEqual(files.sort());
  });
});
