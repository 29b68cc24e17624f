// Admission as pure functions: what one object's spec makes invalid, an AdmissionReview read at the
// edge (every malformed body a message, with the uid when there is one), verdicts and their answer.
import { describe, expect, it } from 'vitest';
import { readReview, type Review } from './review.ts';
import { specProblem } from './spec.ts';
import { lintWarnings } from './warnings.ts';
import { boundWarnings, MAX_WARNING_CHARS, MAX_WARNINGS, reviewResponse, verdictOf, withIncoming, type ReviewedObject } from './verdict.ts';

const API = 'acl.policyagent.dev/v1alpha1';
const GVK = { group: 'acl.policyagent.dev', version: 'v1alpha1' };

function obj(kind: string, name: string, spec: unknown, namespace: string | undefined = 'acme'): Record<string, unknown> {
  return { apiVersion: API, kind, metadata: { name, ...(namespace === undefined ? {} : { namespace }) }, spec };
}

const RULE = {
  state: 'Enforced',
  subjectType: 'user',
  actions: ['read'],
  resourceType: 'document',
  condition: 'principal.team == resource.team',
};

function review(request: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request };
}

function create(kind: string, object: Record<string, unknown>, extra: Record<string, unknown> = {}): Review {
  const read = readReview(review({ uid: 'u-1', kind: { ...GVK, kind }, operation: 'CREATE', namespace: 'acme', object, ...extra }));
  if (!read.ok) throw new Error(read.message);
  return read.review;
}

describe('specProblem', () => {
  it('finds nothing wrong with valid objects of each kind', () => {
    expect(specProblem('Rule', obj('Rule', 'team', RULE))).toBeUndefined();
    expect(specProblem('Connector', obj('Connector', 'gateways', {}))).toBeUndefined();
    expect(specProblem('Bundle', obj('Bundle', 'docs', { connector: 'gateways' }))).toBeUndefined();
    expect(specProblem('Directory', obj('Directory', 'people', { entities: [{ type: 'user', id: 'alice' }] }))).toBeUndefined();
  });

  it('names the line, column and construct of a condition that is not CEL, or is CEL we do not translate', () => {
    expect(specProblem('Rule', obj('Rule', 'bad', { ...RULE, condition: 'principal.team == ' }))).toEqual({
      reason: 'InvalidSpec',
      message: 'syntax error at line 1, column 16: found = but expecting end of input',
    });
    expect(specProblem('Rule', obj('Rule', 'bad', { ...RULE, condition: 'has(principal.x) ? true : false' }))).toEqual({
      reason: 'TranslationFailed',
      message: 'the conditional operator "? :" is not supported (at line 1, column 1)',
    });
  });

  it('refuses what the schema refuses, with the field path', () => {
    expect(specProblem('Bundle', obj('Bundle', 'docs.v1', { connector: 'gateways' }))?.message).toMatch(
      /^metadata\.name: must be lowercase/,
    );
    expect(specProblem('Connector', obj('Connector', 'gateways', { rotate: true }))?.message).toMatch(/Unrecognized key: "rotate"/);
    expect(
      specProblem(
        'Directory',
        obj('Directory', 'people', {
          entities: [
            { type: 'user', id: 'a' },
            { type: 'user', id: 'a' },
          ],
        }),
      )?.message,
    ).toBe('spec.entities.1: user "a" is already listed at entities.0');
    expect(specProblem('Rule', obj('Rule', 'team', { ...RULE, actions: ['read', 'read'] }))?.message).toBe(
      'spec.actions: actions must not repeat',
    );
  });

  it('never looks at other objects: a Bundle naming a Connector nobody created is valid', () => {
    expect(specProblem('Bundle', obj('Bundle', 'docs', { connector: 'nobody-made-me' }))).toBeUndefined();
  });
});

describe('readReview', () => {
  const request = { uid: 'u-7', kind: { ...GVK, kind: 'Rule' }, operation: 'CREATE', namespace: 'acme', object: obj('Rule', 'team', RULE) };

  it.each([
    ['a list', [], /expected a JSON object/, undefined],
    ['null', null, /expected a JSON object/, undefined],
    [
      'an AdmissionReview v1beta1',
      { ...review(request), apiVersion: 'admission.k8s.io/v1beta1' },
      /apiVersion must be admission\.k8s\.io\/v1 .*got "admission\.k8s\.io\/v1beta1"/,
      'u-7',
    ],
    ['another kind', { ...review(request), kind: 'TokenReview' }, /kind must be AdmissionReview, got "TokenReview"/, 'u-7'],
    ['no request', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, /request is missing/, undefined],
    ['no uid', review({ ...request, uid: undefined }), /request is not an AdmissionRequest: uid: /, undefined],
    ['an empty uid', review({ ...request, uid: '' }), /uid: Too small/, undefined],
    ['an unknown operation', review({ ...request, operation: 'PATCH' }), /operation: Invalid option/, 'u-7'],
    [
      'a Deployment',
      review({ ...request, kind: { group: 'apps', version: 'v1', kind: 'Deployment' } }),
      /not apps\/v1 Deployment: check the webhook's rules/,
      'u-7',
    ],
    ['a Pod', review({ ...request, kind: { group: '', version: 'v1', kind: 'Pod' } }), /not core\/v1 Pod/, 'u-7'],
    [
      'a kind of our group we do not review',
      review({ ...request, kind: { ...GVK, kind: 'Policy' } }),
      /not acl\.policyagent\.dev\/v1alpha1 Policy/,
      'u-7',
    ],
    ['a CREATE without the object', review({ ...request, object: undefined }), /request\.object is required for CREATE/, 'u-7'],
    [
      'an UPDATE whose object is a string',
      review({ ...request, operation: 'UPDATE', object: 'x' }),
      /request\.object is required for UPDATE/,
      'u-7',
    ],
  ])('says what is wrong with %s, with the uid when it has one', (_what, body, message, uid) => {
    const read = readReview(body);
    expect(read.ok).toBe(false);
    if (read.ok) return;
    expect(read.message).toMatch(message);
    expect(read.uid).toBe(uid);
  });

  it('reads a DELETE, which carries no object', () => {
    const read = readReview(review({ ...request, operation: 'DELETE', object: null, oldObject: obj('Rule', 'team', RULE) }));
    expect(read).toMatchObject({ ok: true, review: { uid: 'u-7', kind: 'Rule', operation: 'DELETE', object: undefined } });
  });
});

describe('verdictOf', () => {
  it('refuses an invalid spec with the problem its status would name', () => {
    const verdict = verdictOf(create('Rule', obj('Rule', 'bad', { ...RULE, condition: 'principal.team ==' })));
    expect(verdict).toEqual({
      allowed: false,
      problem: { reason: 'InvalidSpec', message: expect.stringMatching(/^syntax error at line 1/) },
    });
  });

  it('admits a valid object, with the namespace of the request when its metadata has none', () => {
    const verdict = verdictOf(create('Connector', obj('Connector', 'gateways', {}, undefined)));
    expect(verdict).toMatchObject({ allowed: true, object: { kind: 'Connector', namespace: 'acme', name: 'gateways' } });
  });

  it('judges an UPDATE that changes the spec, and admits one that leaves it as stored (labels, finalizers) or of an object being deleted', () => {
    const stored = obj('Rule', 'bad', { ...RULE, condition: 'principal.team ==' });
    const update = (object: Record<string, unknown>) => verdictOf(create('Rule', object, { operation: 'UPDATE', oldObject: stored }));
    const metadata = stored['metadata'] as Record<string, unknown>;
    expect(update({ ...stored, metadata: { ...metadata, labels: { team: 'blue' } } })).toMatchObject({ allowed: true });
    // Keys in another order are the same spec.
    const reordered = Object.fromEntries(Object.entries(stored['spec'] as Record<string, unknown>).reverse());
    expect(update({ ...stored, spec: reordered, metadata: { ...metadata, finalizers: [] } })).toMatchObject({ allowed: true });
    expect(update({ ...stored, spec: { ...RULE, condition: 'principal.team === 1' } })).toMatchObject({ allowed: false });
    expect(update({ ...stored, spec: { ...RULE, condition: 'principal.team ==', actions: ['read', 'write'] } })).toMatchObject({
      allowed: false,
    });
    expect(
      update({ ...stored, spec: { ...RULE, condition: '!!' }, metadata: { ...metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }),
    ).toMatchObject({ allowed: true });
    // Without the stored version there is nothing to compare with: the spec is judged.
    expect(verdictOf(create('Rule', stored, { operation: 'UPDATE' }))).toMatchObject({ allowed: false });
  });

  it('always admits a DELETE and a write to a subresource (the operator writes status through /status)', () => {
    const invalid = obj('Rule', 'bad', { ...RULE, condition: '!!!' });
    const del = readReview(
      review({ uid: 'u', kind: { ...GVK, kind: 'Rule' }, operation: 'DELETE', namespace: 'acme', oldObject: invalid }),
    );
    expect(del.ok && verdictOf(del.review)).toEqual({ allowed: true, object: undefined });
    expect(verdictOf(create('Rule', invalid, { operation: 'UPDATE', subResource: 'status' }))).toEqual({
      allowed: true,
      object: undefined,
    });
  });
});

describe('warnings', () => {
  const rule = (name: string): ReviewedObject => ({ kind: 'Rule', namespace: 'acme', name, raw: obj('Rule', name, RULE) });

  it('puts the incoming object in place of its stored version, or adds it', () => {
    const incoming = { ...rule('a'), raw: obj('Rule', 'a', { ...RULE, state: 'Draft' }) };
    const bundleA: ReviewedObject = { kind: 'Bundle', namespace: 'acme', name: 'a', raw: {} };
    expect(withIncoming([rule('a'), bundleA, rule('b')], incoming)).toEqual([bundleA, rule('b'), incoming]);
    expect(withIncoming([rule('b')], incoming)).toEqual([rule('b'), incoming]);
  });

  it(`keeps each warning one line of at most ${MAX_WARNING_CHARS} characters`, () => {
    const long = `R001 ${'x'.repeat(400)}`;
    const [cut] = boundWarnings([long]);
    expect(Array.from(cut ?? '')).toHaveLength(MAX_WARNING_CHARS);
    expect(cut?.endsWith('…')).toBe(true);
    expect(boundWarnings(['two\nlines\tand\u0007 a bell ', '  ', 'ok'])).toEqual(['two lines and a bell', 'ok']);
    // Characters, not UTF-16 units: an emoji is not split in half.
    const emoji = boundWarnings(['😀'.repeat(300)])[0] ?? '';
    expect(emoji.isWellFormed()).toBe(true);
    expect(Array.from(emoji)).toHaveLength(MAX_WARNING_CHARS);
  });

  it(`sends at most ${MAX_WARNINGS} warnings, the last counting the others`, () => {
    const many = Array.from({ length: 25 }, (_, i) => `finding ${i}`);
    const sent = boundWarnings(many);
    expect(sent).toHaveLength(MAX_WARNINGS);
    expect(sent.at(-1)).toBe('and 16 more warnings');
    expect(boundWarnings(many.slice(0, MAX_WARNINGS))).toEqual(many.slice(0, MAX_WARNINGS));
  });
});

describe('reviewResponse', () => {
  it('answers with the uid, allowed, the refusal as a 422 status and the warnings', () => {
    expect(
      reviewResponse('u-1', { allowed: false, problem: { reason: 'InvalidSpec', message: 'spec.x: bad' } }, []),
    ).toMatchInlineSnapshot(`
      {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
          "allowed": false,
          "status": {
            "code": 422,
            "message": "spec.x: bad",
            "reason": "Invalid",
          },
          "uid": "u-1",
        },
      }
    `);
    expect(reviewResponse('u-2', { allowed: true, object: undefined }, ['W1 a warning'])).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-2', allowed: true, warnings: ['W1 a warning'] },
    });
    expect(reviewResponse('u-3', { allowed: true, object: undefined }, [])).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-3', allowed: true },
    });
  });
});

describe('lint warnings', () => {
  const ruleOf = (name: string, spec: Record<string, unknown>): ReviewedObject => ({
    kind: 'Rule',
    namespace: 'acme',
    name,
    raw: { apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Rule', metadata: { name, namespace: 'acme' }, spec },
  });
  const base = { state: 'Enforced', subjectType: 'user', actions: ['read'], resourceType: 'document' };

  it('are the findings about the object admitted only, code first', () => {
    const incoming = ruleOf('owners', { ...base, condition: 'resource.properties.owner == principal.id' });
    const { state: _state, ...stateless } = base;
    const other = ruleOf('drafty', { ...stateless, condition: 'principal.id == "x"' });
    const warnings = lintWarnings(incoming, [other, incoming]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^PropertiesPath: the condition reads resource\.properties\.owner, .*Fix: read resource\.owner instead\.$/);
    expect(lintWarnings(other, [other, incoming])[0]).toMatch(/^StateNotSet: /);
  });
});
