// deploy/monitoring/prometheusrule.yaml agrees with the code: every metric an alert reads is one the
// operator registers (createMetrics, as both modes build it), every label it filters or groups on is
// one that metric has, counters alone go through rate() and increase(), and each alert tells the
// on-call what to do. With promtool (Debian's prometheus package) on PATH, or named by $PROMTOOL, the
// rules also pass `promtool check rules`, and `promtool test rules` fires them on made-up series.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.ts';
import { readPromql } from './support/promql.ts';

const DEPLOY = join(import.meta.dirname, '..', 'deploy');

interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}
interface RuleGroup {
  readonly name: string;
  readonly rules: readonly AlertRule[];
}
interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace: string; readonly labels: Record<string, string> };
  readonly spec: { readonly groups: readonly RuleGroup[] };
}

const read = (path: string): Manifest => parse(readFileSync(join(DEPLOY, path), 'utf8')) as Manifest;
const manifest = read('monitoring/prometheusrule.yaml');
const alerts = manifest.spec.groups.flatMap((g) => g.rules);

interface Known {
  readonly type: string;
  readonly labels: readonly string[];
}

/** Every series name the operator exports, with its type and labels: a histogram as its _bucket (with le), _sum and _count. */
function registered(): Map<string, Known> {
  const known = new Map<string, Known>();
  for (const m of createMetrics().registry.getMetricsAsArray()) {
    // Every prom-client metric holds the label names it was made with; the typings leave them out.
    const labels = (m as unknown as { labelNames: readonly string[] }).labelNames;
    const type = String(m.type);
    if (type !== 'histogram') known.set(m.name, { type, labels });
    else {
      known.set(`${m.name}_bucket`, { type: 'counter', labels: [...labels, 'le'] });
      known.set(`${m.name}_sum`, { type: 'counter', labels });
      known.set(`${m.name}_count`, { type: 'counter', labels });
    }
  }
  return known;
}
const KNOWN = registered();

/** What other components export that a rule reads: the API server's (Kubernetes 1.24 and later). */
const EXTERNAL: ReadonlyMap<string, Known> = new Map([
  ['apiserver_admission_webhook_fail_open_count', { type: 'counter', labels: ['name', 'type'] }],
]);

/** Labels the Prometheus Operator puts on every series scraped through a ServiceMonitor. */
const TARGET_LABELS = ['job', 'instance', 'namespace', 'service', 'endpoint', 'pod', 'container'];

/** Whatever in an expression does not match the metrics: unknown names, labels they lack, a gauge through rate(). */
function problemsOf(expr: string): string[] {
  const { selectors, groupings, rated } = readPromql(expr);
  const problems: string[] = [];
  const has = (m: Known, label: string): boolean => m.labels.includes(label) || TARGET_LABELS.includes(label);
  for (const s of selectors) {
    const m = KNOWN.get(s.name) ?? EXTERNAL.get(s.name);
    if (!m) {
      problems.push(`${s.name}: not a metric the operator registers`);
      continue;
    }
    for (const l of s.labels) if (!has(m, l)) problems.push(`${s.name}{${l}}: ${s.name} has no label ${l}`);
    for (const g of groupings.filter((x) => s.at >= x.from && s.at <= x.to))
      for (const l of g.labels) if (!has(m, l)) problems.push(`${g.keyword} (${l}) over ${s.name}: it has no label ${l}`);
    if (rated.some((r) => s.at > r.from && s.at < r.to) && m.type !== 'counter')
      problems.push(`${s.name}: a ${m.type} read through rate() or increase()`);
  }
  return problems;
}

/** The promtool to run: $PROMTOOL, else `promtool` when it is on PATH. */
function findPromtool(): string | undefined {
  const candidate = process.env['PROMTOOL'] ?? 'promtool';
  return spawnSync(candidate, ['--version'], { encoding: 'utf8' }).status === 0 ? candidate : undefined;
}
const PROMTOOL = findPromtool();
const NO_PROMTOOL = PROMTOOL ? '' : ' (skipped: no promtool on PATH nor in $PROMTOOL; Debian: apt-get install prometheus)';

const work = mkdtempSync(join(tmpdir(), 'acl-rules-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function promtool(args: string[]): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL as string, args, { cwd: work, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('deploy/monitoring/prometheusrule.yaml', () => {
  it('is a PrometheusRule of acl-system, labelled like the ServiceMonitor beside it', () => {
    const monitor = read('monitoring/servicemonitor.yaml');
    expect(manifest).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    expect(manifest.metadata.namespace).toBe(monitor.metadata.namespace);
    expect(manifest.metadata.labels).toEqual(monitor.metadata.labels);
  });

  it('gives every alert a for:, a severity, a summary, and a description that points to the docs', () => {
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    for (const a of alerts) {
      expect(a.alert, a.alert).toMatch(/^AclOperator[A-Z]\w+$/);
      expect(a.for, a.alert).toMatch(/^\d+[mh]$/);
      expect(['critical', 'warning', 'info'], a.alert).toContain(a.labels?.['severity']);
      expect(Object.keys(a.annotations ?? {}).sort(), a.alert).toEqual(['description', 'summary']);
      expect(a.annotations?.['description'], a.alert).toMatch(/docs\/\w+\.md, "[^"]+"/);
    }
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length);
  });

  it('reads only metrics the operator registers, by labels they have, and counters alone through rate or increase', () => {
    const problems = alerts.map((a) => ({ alert: a.alert, problems: problemsOf(a.expr) }));
    expect(problems.filter((p) => p.problems.length > 0)).toEqual([]);
    const used = new Set(alerts.flatMap((a) => readPromql(a.expr).selectors.map((s) => s.name)));
    // The alerts the on-call was promised: the leader, agents, RolledOut, the webhook, tokens, watches, invalid objects, propagation.
    for (const name of [
      'acl_leader',
      'acl_agents',
      'acl_bundle_rolled_out',
      'acl_admission_reviews_total',
      'acl_bundle_requests_unrecorded_total',
      'acl_watch_restarts_total',
      'acl_objects',
      'acl_bundle_propagation_seconds_bucket',
    ])
      expect(used, name).toContain(name);
  });

  it('catches a renamed metric, a label the metric lacks and a gauge read through rate, so the check above can fail', () => {
    expect(problemsOf('sum(acl_leaders) != 1')).toEqual(['acl_leaders: not a metric the operator registers']);
    expect(problemsOf('max by (tenant, bundle) (acl_agents{status="failing"}) > 0')).toEqual([
      'acl_agents{status}: acl_agents has no label status',
    ]);
    expect(problemsOf('sum by (tenant) (acl_objects{phase="Invalid"})')).toEqual(['by (tenant) over acl_objects: it has no label tenant']);
    expect(problemsOf('max(acl_objects) by (bundle)')).toEqual(['by (bundle) over acl_objects: it has no label bundle']);
    expect(problemsOf('sum(rate(acl_queue_depth[5m])) > 0')).toEqual(['acl_queue_depth: a gauge read through rate() or increase()']);
    expect(problemsOf('histogram_quantile(0.99, sum by (le) (rate(acl_bundle_propagation_seconds[1h])))')).toEqual([
      'acl_bundle_propagation_seconds: not a metric the operator registers',
    ]);
    // A label used beside the aggregation, not inside it, is not held against the metric inside.
    expect(problemsOf('sum by (le) (rate(acl_bundle_propagation_seconds_bucket{pod="a"}[1h]))')).toEqual([]);
  });

  it("names the webhook of deploy/60-webhook.yaml in the API server's fail-open alert", () => {
    const configuration = parseAllDocuments(readFileSync(join(DEPLOY, '60-webhook.yaml'), 'utf8'))
      .map((d) => d.toJS() as { kind: string; webhooks?: { name: string }[] })
      .find((d) => d.kind === 'ValidatingWebhookConfiguration');
    const failOpen = alerts.find((a) => a.alert === 'AclOperatorWebhookFailingOpen');
    expect(failOpen?.expr).toContain(`{name="${configuration?.webhooks?.[0]?.name}"}`);
  });

  it.skipIf(!PROMTOOL)(`passes promtool check rules${NO_PROMTOOL}`, () => {
    writeFileSync(join(work, 'check.yaml'), stringify(manifest.spec));
    const { status, output } = promtool(['check', 'rules', 'check.yaml']);
    expect(output).toContain(`SUCCESS: ${alerts.length} rules found`);
    expect(status).toBe(0);
  });

  it.skipIf(!PROMTOOL)(`fires each alert an on-call relies on, once per install however many replicas report it${NO_PROMTOOL}`, () => {
    // Descriptions are prose for people; the summaries (with $value and $labels) are checked.
    const groups = manifest.spec.groups.map((g) => ({
      ...g,
      rules: g.rules.map(({ annotations, ...r }) => ({ ...r, annotations: { summary: annotations?.['summary'] ?? '' } })),
    }));
    writeFileSync(join(work, 'rules.yaml'), stringify({ groups }));
    writeFileSync(join(work, 'rules.test.yaml'), stringify(PROMTOOL_TESTS));
    const { status, output } = promtool(['test', 'rules', 'rules.test.yaml']);
    expect(output).toContain('SUCCESS');
    expect(status).toBe(0);
  });
});

/** Two replicas (pods a and b) as the ServiceMonitor scrapes them, every minute. */
const replicas = (series: string, a: string, b: string = a): { series: string; values: string }[] => [
  { series: series.replace('{', '{pod="a",'), values: a },
  { series: series.replace('{', '{pod="b",'), values: b },
];

const PROMTOOL_TESTS = {
  rule_files: ['rules.yaml'],
  evaluation_interval: '1m',
  tests: [
    {
      // Both replicas say they lead; then none does.
      interval: '1m',
      input_series: replicas('acl_leader{}', '1x5 0x10'),
      alert_rule_test: [
        { eval_time: '1m', alertname: 'AclOperatorLeaderCount', exp_alerts: [] },
        {
          eval_time: '4m',
          alertname: 'AclOperatorLeaderCount',
          exp_alerts: [
            {
              exp_labels: { severity: 'critical' },
              exp_annotations: { summary: '2 replicas of acl-operator hold the Lease (expected 1).' },
            },
          ],
        },
        {
          eval_time: '10m',
          alertname: 'AclOperatorLeaderCount',
          exp_alerts: [
            {
              exp_labels: { severity: 'critical' },
              exp_annotations: { summary: '0 replicas of acl-operator hold the Lease (expected 1).' },
            },
          ],
        },
        { eval_time: '10m', alertname: 'AclOperatorDown', exp_alerts: [] },
      ],
    },
    {
      // One leader: quiet. Then no replica is scraped at all.
      interval: '1m',
      input_series: [...replicas('acl_leader{}', '1x5', '0x5')],
      alert_rule_test: [
        { eval_time: '5m', alertname: 'AclOperatorLeaderCount', exp_alerts: [] },
        {
          eval_time: '17m',
          alertname: 'AclOperatorDown',
          exp_alerts: [{ exp_labels: { severity: 'critical' }, exp_annotations: { summary: 'No replica of acl-operator is scraped.' } }],
        },
      ],
    },
    {
      // Each replica counts the whole fleet: two failing agents are two, not four; the healthy bundle is quiet.
      interval: '1m',
      input_series: [
        ...replicas('acl_agents{tenant="shop",bundle="web",state="failing"}', '2x20'),
        ...replicas('acl_agents{tenant="shop",bundle="api",state="failing"}', '0x20'),
        ...replicas('acl_agents{tenant="shop",bundle="web",state="behind"}', '0x5 1x20'),
        ...replicas('acl_bundle_rolled_out{tenant="shop",bundle="web",status="False"}', '1x40'),
        ...replicas('acl_bundle_rolled_out{tenant="shop",bundle="api",status="False"}', '0x40'),
      ],
      alert_rule_test: [
        { eval_time: '9m', alertname: 'AclOperatorAgentsFailing', exp_alerts: [] },
        {
          eval_time: '11m',
          alertname: 'AclOperatorAgentsFailing',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning', tenant: 'shop', bundle: 'web' },
              exp_annotations: { summary: '2 OPA agent(s) of bundle shop/web fail to get or activate it.' },
            },
          ],
        },
        { eval_time: '19m', alertname: 'AclOperatorAgentsBehind', exp_alerts: [] },
        {
          eval_time: '22m',
          alertname: 'AclOperatorAgentsBehind',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning', tenant: 'shop', bundle: 'web' },
              exp_annotations: { summary: '1 OPA agent(s) of bundle shop/web run an older revision.' },
            },
          ],
        },
        { eval_time: '29m', alertname: 'AclOperatorBundleNotRolledOut', exp_alerts: [] },
        {
          eval_time: '31m',
          alertname: 'AclOperatorBundleNotRolledOut',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning', tenant: 'shop', bundle: 'web' },
              exp_annotations: { summary: 'Bundle shop/web has been RolledOut=False for 30 minutes.' },
            },
          ],
        },
      ],
    },
    {
      // A sidecar left with a rotated token polls every 10 s (replica a), and reports to replica b.
      interval: '1m',
      input_series: [
        { series: 'acl_bundle_requests_unrecorded_total{pod="a",code="401"}', values: '0+6x40' },
        { series: 'acl_agent_uploads_unrecorded_total{pod="b",endpoint="status",code="401"}', values: '0+6x40' },
        { series: 'acl_admission_reviews_total{pod="a",result="error"}', values: '0x10 1x30' },
        { series: 'acl_admission_reviews_total{pod="a",result="denied"}', values: '0+5x40' },
      ],
      alert_rule_test: [
        { eval_time: '12m', alertname: 'AclOperatorRetiredTokenInUse', exp_alerts: [] },
        {
          eval_time: '20m',
          alertname: 'AclOperatorRetiredTokenInUse',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning' },
              exp_annotations: { summary: 'Requests keep presenting a connector token that is not the current one.' },
            },
          ],
        },
        {
          eval_time: '18m',
          alertname: 'AclOperatorWebhookErrors',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning', result: 'error' },
              exp_annotations: { summary: 'The admission webhook answered about 1 review(s) with result error in 15 minutes.' },
            },
          ],
        },
        // Denied reviews are users' invalid objects, refused as they should be: never an alert.
        { eval_time: '40m', alertname: 'AclOperatorWebhookErrors', exp_alerts: [] },
      ],
    },
  ],
};
