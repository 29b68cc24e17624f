import { bundleEntry } from '../../../test/support/fleet.ts';
import { describe, expect, it } from 'vitest';
import { agentsReport, createAgentRegistry, type RecentDecision } from '../../fleet/index.ts';
import { EMPTY_DIRECTORY, type RuleModel } from '../../policy/index.ts';
import type { BundleEntry } from '../../store/index.ts';
import { renderHtml } from '../html.ts';
import { viewed } from '../view.ts';
import { type BundleView, DECISIONS_SHOWN, renderBundle } from './bundle.ts';
import { parseActivityFilter } from './activity.ts';

const NOW = Date.parse('2026-11-24T10:00:00Z');

const rule = (name: string, over: Partial<RuleModel> = {}): RuleModel => ({
  namespace: 'acme',
  name,
  state: 'Enforced',
  description: undefined,
  subjectType: 'user',
  actions: ['read'],
  resourceType: 'document',
  conditionText: undefined,
  condition: undefined,
  ...over,
});

const entry = (revision: number, rules: readonly RuleModel[], entityTypes: readonly string[] = []): BundleEntry => ({
  tenant: 'acme',
  name: 'docs',
  connector: 'gateways',
  ruleCount: rules.length,
  built: {
    rego: '',
    regoText: '',
    regoHex: '',
    kid: undefined,
    inputDigest: 'in',
    revision,
    manifest: '{}',
    bytes: new Uint8Array(),
    digest: 'sha256:abc',
    etag: '"abc"',
  },
  source: { rules, regoVersion: 1, entityTypes: JSON.stringify(entityTypes), directory: EMPTY_DIRECTORY },
});

function bundleObject(spec: unknown, status: unknown = {}) {
  return viewed('Bundle', {
    kind: 'Bundle',
    metadata: { name: 'docs', namespace: 'acme' },
    raw: { apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Bundle', metadata: { name: 'docs', namespace: 'acme' }, spec, status },
  });
}

function view(over: Partial<BundleView> = {}): BundleView {
  return {
    tenant: 'acme',
    name: 'docs',
    bundle: bundleObject({ connector: 'gateways' }, { phase: 'Ready', revision: 3 }),
    entry: entry(3, [rule('team-documents', { conditionText: 'principal.team == resource.team' })]),
    activity: [],
    filter: parseActivityFilter(new URLSearchParams()),
    agents: undefined,
    decisions: [],
    nowMs: NOW,
    ...over,
  };
}

const render = (v: BundleView): string => renderHtml(renderBundle(v));

describe('bundle page', () => {
  it('is a pure function of its view: the same view gives the same HTML', () => {
    expect(render(view())).toBe(render(view()));
  });

  it('shows the served build over the revision status last recorded, and the Rego version of the spec', () => {
    const out = render(view({ bundle: bundleObject({ connector: 'gateways', regoVersion: 1 }, { revision: 2 }) }));
    expect(out).toContain('<dt>Revision</dt><dd>3</dd>');
    expect(out).toContain('<dd>v1</dd>');
    expect(out).toContain('<code>sha256:abc</code>');
  });

  it('shows an invalid Bundle that was never built as such: no revision, no rules, no agents', () => {
    const out = render(view({ bundle: bundleObject({ connector: 7 }, { phase: 'Invalid' }), entry: undefined }));
    expect(out).toContain('<span class="badge bad">Invalid</span>');
    expect(out).toContain('none served yet');
    expect(out).toContain('Nothing is served yet, so it carries no rules.');
    expect(out).toContain('No revision is served yet: no agent can run it.');
    expect(out).toContain('all rules');
  });

  it('takes the entity filter the served build has when the spec is invalid now', () => {
    const out = render(view({ bundle: bundleObject({}), entry: entry(3, [], ['document', 'folder']) }));
    expect(out).toContain('rules whose subject or resource type is <code>document</code>, <code>folder</code>');
  });

  it('says when the Bundle is gone from the source while its last build is shown', () => {
    expect(render(view({ bundle: undefined }))).toContain('This Bundle is gone from the source');
  });

  it('says a bundle without rules denies everything', () => {
    expect(render(view({ entry: entry(1, []) }))).toContain('It carries no rule');
  });

  it('lists agents behind and failing with their revision and error, and a second bundle an agent also loads', () => {
    const registry = createAgentRegistry({ windowMs: 60_000, maxAgents: 100 });
    const report = (id: string, b: { name: string; activeRevision?: string; error?: { code: string; message: string } }[]) =>
      registry.record({
        tenant: 'acme',
        agentId: id,
        version: '1.1.0',
        signingKey: undefined,
        clientIp: '10.0.0.9',
        timeMs: NOW - 5000,
        bundles: b.map((x) => ({
          name: x.name,
          activeRevision: x.activeRevision,
          lastActivation: undefined,
          lastDownload: undefined,
          error: x.error,
          httpCode: undefined,
          stopping: false,
        })),
      });
    report('opa-behind', [{ name: 'docs', activeRevision: '2' }]);
    report('opa-two', [{ name: 'docs', activeRevision: '3' }, { name: 'internal' }]);
    const agents = agentsReport(registry, { tenant: 'acme', connector: 'gateways', bundle: 'docs', revision: 3 }, NOW);
    const out = render(view({ agents }));
    expect(out).toContain('0/2 current');
    expect(out).toContain('<span class="badge warn">behind</span>');
    expect(out).toContain(' also loads internal');
    expect(out).toContain('5 s ago');
    expect(out.indexOf('opa-two')).toBeLessThan(out.indexOf('opa-behind'));
  });

  it('shows the key each agent verifies with, the agents counted by key, KeyRotated and the key that signs', () => {
    const A = 'acl-aaaaaaaaaaaaaaaa';
    const B = 'acl-bbbbbbbbbbbbbbbb';
    const registry = createAgentRegistry({ windowMs: 60_000, maxAgents: 100 });
    const report = (id: string, signingKey: string | undefined) =>
      registry.record({
        tenant: 'acme',
        agentId: id,
        version: '1.1.0',
        signingKey,
        clientIp: '10.0.0.9',
        timeMs: NOW - 5000,
        bundles: [bundleEntry('docs')],
      });
    report('opa-new-1', B);
    report('opa-new-2', B);
    report('opa-old', A);
    report('opa-hand', undefined);
    const agents = agentsReport(registry, { tenant: 'acme', connector: 'gateways', bundle: 'docs', revision: 3 }, NOW);
    const rotating = {
      type: 'KeyRotated',
      status: 'False',
      reason: 'Rotating',
      message: `2 of 4 agents verify with ${B}; waiting for opa-hand (no acl-signing-key label: …), opa-old (${A})`,
      lastTransitionTime: '2026-11-24T09:59:00Z',
    };
    const out = render(
      view({
        agents,
        bundle: bundleObject({ connector: 'gateways' }, { phase: 'Ready', revision: 3, signingKey: B, conditions: [rotating] }),
      }),
    );
    expect(out).toContain(`<dt>Signed by</dt><dd><code>${B}</code></dd>`);
    expect(out).toContain('KeyRotated <span class="badge bad">False</span> <span class="muted">Rotating</span>');
    expect(out).toContain(`waiting for opa-hand (no acl-signing-key label: …), opa-old (${A})`);
    expect(out).toContain(`<span class="stat-chip"><code>${B}</code> 2</span>`);
    expect(out).toContain('<span class="stat-chip"><span class="muted">no label</span> 1</span>');
    expect(out).toContain('<th scope="col">Verifies with</th>');
    const row = (id: string): string =>
      out.slice(out.indexOf(`<code>${id}</code>`), out.indexOf('</tr>', out.indexOf(`<code>${id}</code>`)));
    expect(row('opa-old')).toContain(`<td><code>${A}</code></td>`);
    expect(row('opa-hand')).toContain('<td><span class="muted">no label</span></td>');
  });

  it('says a bundle served unsigned is signed by no key', () => {
    const unsigned = {
      type: 'KeyRotated',
      status: 'True',
      reason: 'Unsigned',
      message: 'Bundles are served unsigned (--unsigned-bundles): no key to rotate',
    };
    const out = render(view({ bundle: bundleObject({ connector: 'gateways' }, { phase: 'Ready', revision: 3, conditions: [unsigned] }) }));
    expect(out).toContain('<dt>Signed by</dt><dd><span class="muted">unsigned (--unsigned-bundles)</span></dd>');
    // Nothing said about a key when status names none (a status written before signed bundles).
    expect(render(view())).not.toContain('Signed by');
  });

  it(`shows the newest ${DECISIONS_SHOWN} decisions and says where the rest are`, () => {
    const decisions: RecentDecision[] = Array.from({ length: 40 }, (_, i) => ({
      time: `2026-11-24T09:59:${String(59 - i).padStart(2, '0')}Z`,
      agent: 'opa-1',
      decisionId: `d${i}`,
      revision: '3',
      path: 'acl/allow',
      decision: i === 0 ? 'error' : 'deny',
      result: undefined,
      input: { i },
    }));
    const out = render(view({ decisions }));
    expect(out.match(/<details>/g)).toHaveLength(DECISIONS_SHOWN);
    expect(out).toContain(`The newest ${DECISIONS_SHOWN} of the 40 kept`);
    expect(out).toContain('<pre>{&quot;i&quot;:0}</pre>');
    expect(out).not.toContain(`<pre>{&quot;i&quot;:${DECISIONS_SHOWN}}</pre>`);
    expect(out).toContain('<span class="badge warn">error</span>');
  });

  it('marks every part that changes with a stable id and data-live, for the live updates to swap', () => {
    const ids = [...render(view()).matchAll(/id="([^"]+)" data-live/g)].map((m) => m[1]);
    expect(ids).toEqual(['bundle-facts', 'bundle-rules', 'bundle-activity', 'bundle-agents', 'bundle-decisions']);
  });
});
