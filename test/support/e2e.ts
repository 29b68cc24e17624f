// The set-up every test/e2e file shares, written once: a describe that runs only with E2E_KUBECONFIG,
// the CRDs applied before its tests, and for each test (or once for the file) namespaces holding the
// objects it starts from and operators started in them. Afterwards, even when the test failed,
// everything is undone in the reverse order of its making (operators stopped before their namespace
// is deleted), every step tried however the others went. And the identities an operator runs as
// when a test checks its RBAC: a ServiceAccount with the Roles of deploy/.
import { KubeConfig, type KubernetesObject, type V1PolicyRule } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import type { Operator } from '../../src/modes/index.ts';
import {
  adminClients,
  apply,
  bundleYaml,
  connectorYaml,
  createNamespace,
  customApi,
  E2E_KUBECONFIG,
  ensureCrds,
  loadConfig,
  rbacApi,
  readToken,
  ruleYaml,
  startE2EOperator,
  TEAM_RULE,
  waitFor,
  type E2EOperatorOptions,
} from './kube.ts';

/** A test's namespace: one tenant, its objects read and written as kubectl would. */
export interface Tenant {
  readonly ns: string;
  readonly api: ReturnType<typeof customApi>;
  /** Creates or replaces objects, as `kubectl apply` ends up. */
  apply(objects: readonly KubernetesObject[]): Promise<void>;
  /** The token a Connector's Secret holds, once the leader has issued one. */
  token(connector?: string): Promise<string>;
  /** A Bundle's status, once it records `revision`. */
  revision(revision: number, bundle?: string): Promise<Record<string, unknown>>;
}

export interface E2E {
  /** A fresh namespace `e2e-<prefix>-<random>` holding `objects(ns)`, deleted afterwards. */
  tenant(prefix: string, objects?: (ns: string) => KubernetesObject[]): Promise<Tenant>;
  /** An operator started in-process (by startE2EOperator, or a start of the test's own), stopped afterwards; stopping it sooner is fine. */
  operator(start: E2EOperatorOptions | Promise<Operator>): Promise<Operator>;
  /** Anything else to undo afterwards (a proxy, a child process, a cluster-scoped object), before what was made earlier. */
  later(undo: () => unknown): void;
}

/** What most tests start from: Connector gateways, Bundle docs of every rule, and Rule `rule` (TEAM_RULE). */
export function docsTenant(ns: string, rule = 'team'): KubernetesObject[] {
  return [connectorYaml(ns, 'gateways'), bundleYaml(ns, 'docs', { connector: 'gateways' }), ruleYaml(ns, rule, TEAM_RULE)];
}

function tenantIn(ns: string): Tenant {
  const api = customApi(ns);
  return {
    ns,
    api,
    async apply(objects) {
      await apply(loadConfig(), objects);
    },
    token: (connector = 'gateways') => waitFor(`the token of Connector ${connector}`, () => readToken(ns, connector)),
    revision: (revision, bundle = 'docs') =>
      waitFor(`Bundle ${bundle} at revision ${revision}`, async () => {
        const status = await api.status('Bundle', bundle);
        return status['revision'] === revision ? status : undefined;
      }),
  };
}

/** Runs every undo, the last made first, and then fails with the first that failed. */
async function undoAll(undo: (() => unknown)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const step of undo.splice(0).reverse()) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw failures[0];
}

/**
 * A describe block against the real API server (skipped without E2E_KUBECONFIG) whose `body` builds
 * its tests with `e2e`; with `perFile`, what `e2e` makes lasts until the file's last test.
 */
export function describeE2E(title: string, options: { timeout: number; perFile?: boolean }, body: (e2e: E2E) => void): void {
  describe.skipIf(!E2E_KUBECONFIG)(title, { timeout: options.timeout }, () => {
    const undo: (() => unknown)[] = [];
    beforeAll(ensureCrds);
    (options.perFile ? afterAll : afterEach)(() => undoAll(undo));
    body({
      async tenant(prefix, objects) {
        const n = await createNamespace(prefix);
        undo.push(n.drop);
        if (objects) await apply(loadConfig(), objects(n.name));
        return tenantIn(n.name);
      },
      async operator(start) {
        const op = await (start instanceof Promise ? start : startE2EOperator(start));
        undo.push(op.stop);
        return op;
      },
      later(step) {
        undo.push(step);
      },
    });
  });
}

/** The rules of Role or ClusterRole `name` among `objects` (deploy/'s YAML). */
export function rulesOf(objects: readonly KubernetesObject[], kind: string, name: string): V1PolicyRule[] {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name) as
    | (KubernetesObject & { rules?: V1PolicyRule[] })
    | undefined;
  if (!o?.rules) throw new Error(`deploy/ has no ${kind} ${name}`);
  return o.rules;
}

/** A Role `name` of `ns` holding `rules`, bound to the ServiceAccount `account` of `accountNs`. */
export async function bindRole(ns: string, name: string, rules: V1PolicyRule[], account: string, accountNs = ns): Promise<void> {
  const rbac = rbacApi();
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: accountNs }],
    },
  });
}

/** A ServiceAccount `name` of `ns` and a kubeconfig that signs in as it (with a token Secret's token: every server version fills one). */
export async function serviceAccountConfig(ns: string, name: string): Promise<KubeConfig> {
  const { core } = adminClients();
  const secret = `${name}-sa-token`;
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: secret, annotations: { 'kubernetes.io/service-account.name': name } },
      type: 'kubernetes.io/service-account-token',
    },
  });
  const token = await waitFor(`the token of ServiceAccount ${name}`, async () => {
    const s = await core.readNamespacedSecret({ name: secret, namespace: ns });
    return s.data?.['token'] ? Buffer.from(s.data['token'], 'base64').toString('utf8') : undefined;
  });
  const cluster = loadConfig().getCurrentCluster();
  if (!cluster) throw new Error('E2E_KUBECONFIG has no current cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name, token }],
    contexts: [{ name, cluster: cluster.name, user: name }],
    currentContext: name,
  });
  return kc;
}
