import { agentFixture } from '../../test/support/fleet.ts';
import { describe, expect, it } from 'vitest';
import { summarize } from './agents.ts';
import { agentsStatus, rolloutCondition } from './rollout.ts';

const agent = agentFixture;

describe('RolledOut', () => {
  it('is True when every agent runs the served revision', () => {
    const s = summarize([agent('a'), agent('b'), agent('c')], '5');
    expect(rolloutCondition(s, 5, 300)).toEqual({ status: 'True', reason: 'AllAgentsCurrent', message: 'All 3 agent(s) run revision 5' });
    expect(agentsStatus(s)).toEqual({ reporting: 3, current: 3, behind: 0, failing: 0, rollout: '3/3' });
  });

  it('is False naming how many are behind or failing, and which, failing first', () => {
    const s = summarize(
      [
        agent('a'),
        agent('b', { activeRevision: '4' }),
        agent('c', { error: { code: 'bundle_error', message: 'server replied with Unauthorized' }, httpCode: 401, activeRevision: '4' }),
        agent('d', { alsoLoads: ['gateway-all-v1'] }),
      ],
      '5',
    );
    const c = rolloutCondition(s, 5, 300);
    expect(c).toMatchObject({ status: 'False', reason: 'AgentsFailing' });
    expect(c.message).toBe(
      '1 of 4 agent(s) run revision 5; 1 behind, 2 failing: ' +
        'c failing (401: server replied with Unauthorized; runs revision 4); ' +
        'd failing (it is configured with 2 bundles of acl-operator, also gateway-all-v1: their roots overlap, so only one can activate; give each bundle its own OPA); ' +
        'b behind (on revision 4)',
    );
    expect(agentsStatus(s).rollout).toBe('1/4');
  });

  it('tells what to do for an OPA without a signing block, which refuses every signed bundle', () => {
    const refused = { code: 'bundle_error', message: 'verification key not provided' };
    const c = rolloutCondition(summarize([agent('old', { error: refused, activeRevision: '4' })], '5'), 5, 300);
    expect(c.message).toContain(
      'old failing (bundle_error: verification key not provided; runs revision 4; this OPA has no signing block: start it with the configuration acl-operator prints',
    );
  });

  it('says AgentsBehind when none fails, and how many more than it names', () => {
    const s = summarize(
      Array.from({ length: 8 }, (_, i) => agent(`x${i}`, { activeRevision: i === 0 ? undefined : '4' })),
      '5',
    );
    const c = rolloutCondition(s, 5, 300);
    expect(c.reason).toBe('AgentsBehind');
    expect(c.message).toMatch(
      /^0 of 8 agent\(s\) run revision 5; 8 behind, 0 failing: x0 behind \(no revision active yet\); x1 behind \(on revision 4\);.*; and 3 more$/,
    );
  });

  it('is Unknown with no agents, or nothing served', () => {
    expect(rolloutCondition(summarize([], '5'), 5, 300)).toMatchObject({ status: 'Unknown', reason: 'NoAgents' });
    expect(rolloutCondition(summarize([], undefined), 5, 300).message).toContain('in the last 300 s');
    expect(rolloutCondition(summarize([agent('a')], undefined), undefined, 300)).toMatchObject({ status: 'Unknown', reason: 'NotServed' });
  });
});
