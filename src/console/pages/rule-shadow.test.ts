import { describe, expect, it } from 'vitest';
import { pageText, request, route, rule, SPEC } from '../../../test/support/console-page.ts';
import { readableInput } from './rule-shadow.ts';

const XSS = '<script>alert(1)</script>';
const page = (r = rule()) => pageText(route('GET', '').handle(request({ objects: [r] })));

const shadow = {
  role: 'Proposed',
  summary: 'would allow 12 of 3,400',
  observedGeneration: 2,
  since: '2025-03-01T10:00:00.000Z',
  evaluated: 3400,
  matched: 40,
  flips: 12,
  firstTime: '2025-03-01T10:00:01.000Z',
  lastTime: '2025-03-01T11:59:00.000Z',
  lastFlipTime: '2025-03-01T11:30:00.000Z',
  examples: [{ time: '2025-03-01T10:05:00.000Z', input: JSON.stringify({ principal: { type: 'user', id: XSS }, action: 'read' }) }],
};

describe('the rule page shows shadow decisions', () => {
  it("shows a Proposed rule's counts, times and examples as readable JSON, and what they mean", async () => {
    const text = await page(rule({ spec: { ...SPEC, state: 'Proposed' }, status: { phase: 'Proposed', shadow } }));
    expect(text).toContain('Shadow decisions <span class="badge warn">Proposed</span>');
    expect(text).toContain('<dt>Summary</dt><dd><strong>would allow 12 of 3,400</strong></dd>');
    expect(text).toContain('<dt>Evaluated</dt><dd>3,400 ');
    expect(text).toContain('<dt>Matched</dt><dd>40 ');
    expect(text).toContain('<dt>Flips</dt><dd>12 <span class="muted">deny → allow</span>');
    expect(text).toContain('<time datetime="2025-03-01T11:30:00.000Z" title="2025-03-01T11:30:00.000Z">30 min ago</time>');
    expect(text).toContain('(generation 2: an edit starts again)');
    expect(text).toContain('requests that were denied and that this rule would have allowed');
    // The example, indented, its hostile id as text.
    expect(text).toContain('&quot;id&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;');
    expect(text).not.toContain(XSS);
    // In the live region: counts refresh while the page is open.
    expect(text.indexOf('id="rule-live"')).toBeLessThan(text.indexOf('shadow-heading'));
  });

  it('says what a removal mark counts, allow → deny', async () => {
    const removal = { ...shadow, role: 'Removal', summary: 'would deny 5 of 880', flips: 5, examples: [] };
    const text = await page(
      rule({ status: { phase: 'Enforced', shadow: removal }, annotations: { 'acl.policyagent.dev/proposed-state': 'Suspended' } }),
    );
    expect(text).toContain('Shadow decisions <span class="badge warn">Marked for removal</span>');
    expect(text).toContain('<dt>Flips</dt><dd>5 <span class="muted">allow → deny</span>');
    expect(text).toContain('requests that were allowed and that would be denied without it');
  });

  it('tells how to mark an Enforced rule for removal when it has no counts', async () => {
    const text = await page();
    expect(text).toContain('<code>acl.policyagent.dev/proposed-state</code>');
    expect(text).toContain('<code>kubectl -n acme annotate rule team-docs acl.policyagent.dev/proposed-state=Suspended</code>');
  });

  it('says a Proposed rule has no counts yet, and that an unknown proposed state is ignored', async () => {
    expect(await page(rule({ spec: { ...SPEC, state: 'Proposed' } }))).toContain('No counts yet');
    const odd = await page(rule({ annotations: { 'acl.policyagent.dev/proposed-state': `Gone${XSS}` } }));
    expect(odd).toContain('is <code>Gone&lt;script&gt;alert(1)&lt;/script&gt;</code>, which is not a state a rule is');
    expect(odd).not.toContain(XSS);
  });

  it('shows an example cut at 1,024 characters as it is stored', () => {
    expect(readableInput('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(readableInput('{"a":"xx')).toBe('{"a":"xx');
  });
});
