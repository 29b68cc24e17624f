// deploy/networkpolicy/ agrees with the rest of deploy/: it opens to the operator's pods exactly the
// ports its Deployment listens on and its Service and admission webhook send to, lets the webhook's
// caller (the API server, not a pod) in from anywhere, Prometheus in from labelled namespaces only,
// and lets the pods out to the API server and DNS alone. A port changed in the Deployment or the
// Service without the policy fails here, before a cluster drops the traffic.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const DEPLOY = join(ROOT, 'deploy');

interface Port {
  readonly protocol?: string;
  readonly port: number | string;
}
interface Peer {
  readonly namespaceSelector?: { readonly matchLabels?: Record<string, string> };
  readonly podSelector?: unknown;
  readonly ipBlock?: unknown;
}
interface Rule {
  readonly from?: readonly Peer[];
  readonly to?: readonly Peer[];
  readonly ports?: readonly Port[];
}
interface Policy {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: {
    readonly podSelector: { readonly matchLabels?: Record<string, string> };
    readonly policyTypes: readonly string[];
    readonly ingress?: readonly Rule[];
    readonly egress?: readonly Rule[];
  };
}
interface ContainerPort {
  readonly name: string;
  readonly containerPort: number;
  readonly protocol?: string;
}
interface Deployment {
  readonly metadata: { readonly namespace: string };
  readonly spec: {
    readonly template: {
      readonly metadata: { readonly labels: Record<string, string> };
      readonly spec: { readonly containers: readonly { readonly ports: readonly ContainerPort[] }[] };
    };
  };
}
interface Service {
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: { readonly ports: readonly { readonly name: string; readonly port: number; readonly targetPort: number | string }[] };
}

function docs<T>(file: string, kind: string): T[] {
  return parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8'))
    .map((d) => d.toJS() as { kind: string })
    .filter((d) => d.kind === kind) as T[];
}

const policies = docs<Policy>('networkpolicy/networkpolicy.yaml', 'NetworkPolicy');
const [deployment] = docs<Deployment>('30-deployment.yaml', 'Deployment') as [Deployment];
const [service] = docs<Service>('40-service.yaml', 'Service') as [Service];
const podLabels = deployment.spec.template.metadata.labels;
const containerPorts = deployment.spec.template.spec.containers.flatMap((c) => c.ports);

/** Whether a policy's podSelector picks the operator's pods (an empty one picks every pod). */
const selectsOperator = (p: Policy): boolean => Object.entries(p.spec.podSelector.matchLabels ?? {}).every(([k, v]) => podLabels[k] === v);
const operatorPolicies = policies.filter(selectsOperator);
const ingress = operatorPolicies.flatMap((p) => p.spec.ingress ?? []);
const egress = operatorPolicies.flatMap((p) => p.spec.egress ?? []);

/** `8443/TCP`: a port as a rule opens it (TCP when the protocol is left out, as Kubernetes defaults it). */
const text = (p: Port): string => `${p.port}/${p.protocol ?? 'TCP'}`;
/** The container port a Service's targetPort names (by name or number). */
const containerPortOf = (target: number | string): ContainerPort | undefined =>
  containerPorts.find((c) => c.name === target || c.containerPort === target);

describe('deploy/networkpolicy/', () => {
  it('is opt-in: a subfolder, outside the Kustomization of deploy/', () => {
    const kustomization = parseAllDocuments(readFileSync(join(DEPLOY, 'Kustomization'), 'utf8'))[0]?.toJS() as { resources: string[] };
    expect(kustomization.resources.filter((r) => r.includes('networkpolicy'))).toEqual([]);
    expect(readdirSync(join(DEPLOY, 'networkpolicy'))).toEqual(['networkpolicy.yaml']);
  });

  it("isolates every pod of the operator's namespace, in and out", () => {
    expect(new Set(policies.map((p) => p.metadata.namespace))).toEqual(new Set([deployment.metadata.namespace]));
    const deny = policies.find((p) => p.spec.podSelector.matchLabels === undefined);
    expect(deny?.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    // Every other policy opens something to the Deployment's pods, and only to them.
    for (const p of policies.filter((x) => x !== deny)) {
      expect(p.spec.podSelector.matchLabels, p.metadata.name).toBeDefined();
      expect(selectsOperator(p), p.metadata.name).toBe(true);
    }
  });

  it("opens exactly the Deployment's container ports, with their protocols", () => {
    const opened = new Set(ingress.flatMap((r) => r.ports ?? []).map(text));
    expect(opened).toEqual(
      new Set(containerPorts.map((c) => text({ port: c.containerPort, ...(c.protocol ? { protocol: c.protocol } : {}) }))),
    );
    // A rule without ports would open every port.
    expect(ingress.every((r) => (r.ports ?? []).length > 0)).toBe(true);
  });

  it('opens every port the Service sends to', () => {
    const opened = new Set(ingress.flatMap((r) => r.ports ?? []).map(text));
    for (const p of service.spec.ports) {
      const target = containerPortOf(p.targetPort);
      expect(target, `Service port ${p.name}`).toBeDefined();
      expect(opened, `Service port ${p.name}`).toContain(text({ port: target?.containerPort ?? 0, protocol: target?.protocol ?? 'TCP' }));
    }
  });

  it("lets the API server reach the webhook's port from anywhere: its address is not a pod", () => {
    const [configuration] = docs<{ webhooks: { clientConfig: { service: { name: string; port: number } } }[] }>(
      '60-webhook.yaml',
      'ValidatingWebhookConfiguration',
    );
    const called = configuration?.webhooks[0]?.clientConfig.service;
    expect(called?.name).toBe(service.metadata.name);
    const servicePort = service.spec.ports.find((p) => p.port === called?.port);
    const target = containerPortOf(servicePort?.targetPort ?? '');
    const open = ingress.filter((r) => r.from === undefined || r.from.length === 0).flatMap((r) => r.ports ?? []);
    expect(open.map(text)).toEqual([text({ port: target?.containerPort ?? 0, protocol: 'TCP' })]);
  });

  it('lets Prometheus scrape the metrics port only from namespaces carrying the documented label', () => {
    const metrics = containerPortOf('metrics');
    const rules = ingress.filter((r) => (r.ports ?? []).some((p) => p.port === metrics?.containerPort));
    expect(rules).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { 'acl.policyagent.dev/scrape-metrics': 'true' } } }],
        ports: [{ protocol: 'TCP', port: metrics?.containerPort }],
      },
    ]);
    // The ServiceMonitor scrapes the Service's port of that name.
    const [monitor] = docs<{ spec: { endpoints: { port: string }[] } }>('monitoring/servicemonitor.yaml', 'ServiceMonitor');
    const scraped = service.spec.ports.find((p) => p.name === monitor?.spec.endpoints[0]?.port);
    expect(containerPortOf(scraped?.targetPort ?? '')).toBe(metrics);
    expect(readFileSync(join(ROOT, 'docs', 'kubernetes.md'), 'utf8')).toContain('acl.policyagent.dev/scrape-metrics=true');
  });

  it("lets the pods out to the API server (the kubernetes Service's 443, its own 6443) and DNS, nowhere else", () => {
    expect(egress.every((r) => r.to === undefined)).toBe(true);
    expect(egress.flatMap((r) => r.ports ?? []).map(text)).toEqual(['443/TCP', '6443/TCP', '53/UDP', '53/TCP']);
  });
});
