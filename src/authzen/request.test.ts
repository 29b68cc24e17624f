import { describe, expect, it } from 'vitest';
import { decisionInputOf, loggedInputOf } from './request.ts';

const ok = { subject: { type: 'user', id: 'a' }, action: 'read', resource: { type: 'doc', id: 'd' } };

describe('decisionInputOf', () => {
  it('maps properties and extra fields onto attributes; type and id always come from the entity', () => {
    const r = decisionInputOf({
      subject: { type: 'user', id: 'alice', properties: { team: 'red', type: 'admin', id: 'root', level: 2 }, team: 'blue' },
      action: 'read',
      resource: { type: 'doc', id: 'd1' },
    });
    expect(r).toEqual({
      ok: true,
      input: {
        principal: { team: 'blue', level: 2, type: 'user', id: 'alice' },
        action: 'read',
        resource: { type: 'doc', id: 'd1' },
        context: {},
        actionProperties: {},
      },
    });
  });

  it('takes an AuthZEN action object too: its properties (and other fields) become actionProperties', () => {
    const r = decisionInputOf({ ...ok, action: { name: 'delete', properties: { soft: true, level: 1 }, level: 2 } });
    expect(r).toEqual({
      ok: true,
      input: { principal: ok.subject, action: 'delete', resource: ok.resource, context: {}, actionProperties: { soft: true, level: 2 } },
    });
  });

  it('keeps an attribute named __proto__ as data, never as a prototype', () => {
    const body = JSON.parse(
      '{"subject":{"type":"user","id":"a","properties":{"__proto__":{"admin":true}}},"action":"read","resource":{"type":"doc","id":"d"}}',
    ) as unknown;
    const r = decisionInputOf(body);
    expect(r.ok).toBe(true);
    const principal = r.ok ? r.input.principal : {};
    expect(Object.getPrototypeOf(principal)).toBe(Object.prototype);
    expect(Object.hasOwn(principal, '__proto__')).toBe(true);
    expect((principal as Record<string, unknown>)['admin']).toBeUndefined();
  });

  it('counts lengths in code points, not UTF-16 units', () => {
    expect(decisionInputOf({ ...ok, action: `${'😀'.repeat(128)}x` }).ok).toBe(true);
    expect(decisionInputOf({ ...ok, action: '😀'.repeat(257) })).toEqual({ ok: false, message: 'action: must be at most 256 characters' });
  });

  it('reports the first problem, in the order subject, resource, action, context', () => {
    expect(decisionInputOf({ subject: { id: 'a' }, context: 1 })).toEqual({ ok: false, message: 'subject.type is required' });
    expect(decisionInputOf({ ...ok, resource: {}, action: 1 })).toEqual({ ok: false, message: 'resource.type is required' });
  });

  it('treats an attribute named like a problem as an attribute', () => {
    expect(decisionInputOf({ ...ok, subject: { type: 'user', id: 'a', problem: 'x', message: 'y' } }).ok).toBe(true);
  });

  it.each([
    [[], 'the body must be a JSON object'],
    [null, 'the body must be a JSON object'],
    [{ action: 'read', resource: ok.resource }, 'subject is required'],
    [{ ...ok, subject: 'alice' }, 'subject must be an object'],
    [{ ...ok, subject: [] }, 'subject must be an object'],
    [{ ...ok, subject: { id: 'a' } }, 'subject.type is required'],
    [{ ...ok, subject: { type: 1, id: 'a' } }, 'subject.type must be a string'],
    [{ ...ok, resource: { type: 'doc', id: '' } }, 'resource.id: must not be empty'],
    [{ ...ok, resource: { type: 'doc', id: 'x'.repeat(1025) } }, 'resource.id: must be at most 1024 characters'],
    [{ ...ok, subject: { type: 'user', id: 'a', properties: [] } }, 'subject.properties must be an object'],
    [{ ...ok, resource: undefined }, 'resource is required'],
    [{ ...ok, action: undefined }, 'action is required'],
    [{ ...ok, action: 123 }, 'action must be a string or an object {name, properties}'],
    [{ ...ok, action: {} }, 'action.name is required'],
    [{ ...ok, action: { name: 123 } }, 'action.name must be a string'],
    [{ ...ok, action: { name: 'read', properties: [] } }, 'action.properties must be an object'],
    [{ ...ok, context: null }, 'context must be an object'],
    [{ ...ok, context: [1] }, 'context must be an object'],
    [{ ...ok, context: 'x' }, 'context must be an object'],
  ])('refuses %j: %s', (body, message) => {
    expect(decisionInputOf(body)).toEqual({ ok: false, message });
  });
});

describe('loggedInputOf', () => {
  const logged = {
    principal: { type: 'user', id: 'alice', team: 'blue', properties: { nested: true } },
    action: 'read',
    resource: { type: 'doc', id: 'd1' },
    context: { ip: '10.0.0.1' },
    actionProperties: { reason: 'audit' },
  };

  it('gives back the decision input the log recorded, attributes as they were (a "properties" attribute stays one)', () => {
    expect(loggedInputOf(logged)).toEqual({ ok: true, input: logged });
  });

  it('reads an absent context and actionProperties as empty, as the API does', () => {
    const { context: _c, actionProperties: _a, ...bare } = logged;
    expect(loggedInputOf(bare)).toEqual({ ok: true, input: { ...bare, context: {}, actionProperties: {} } });
  });

  it('refuses what the API refuses, with its limits: empty, too long, wrong types', () => {
    const cases: [unknown, string][] = [
      [null, 'the input must be a JSON object'],
      [{ ...logged, principal: 'alice' }, 'principal must be an object'],
      [{ ...logged, principal: { type: '', id: 'a' } }, 'principal.type: must not be empty'],
      [{ ...logged, principal: { type: 'user' } }, 'principal.id is required'],
      [{ ...logged, resource: { type: 'x'.repeat(257), id: 'd' } }, 'resource.type: must be at most 256 characters'],
      [{ ...logged, resource: { type: 'doc', id: 'd'.repeat(1025) } }, 'resource.id: must be at most 1024 characters'],
      [{ ...logged, action: '' }, 'action: must not be empty'],
      [{ ...logged, action: { name: 'read' } }, 'action must be a string'],
      [{ ...logged, action: 'r'.repeat(257) }, 'action: must be at most 256 characters'],
      [{ ...logged, context: [] }, 'context must be an object'],
      [{ ...logged, actionProperties: 'x' }, 'actionProperties must be an object'],
    ];
    for (const [input, message] of cases) expect(loggedInputOf(input)).toEqual({ ok: false, message });
  });

  it('counts lengths in code points and takes the longest id the API takes', () => {
    const id = '😀'.repeat(1024);
    expect(loggedInputOf({ ...logged, resource: { type: 'doc', id } }).ok).toBe(true);
  });

  it('decides the same input the API maps the original request onto', () => {
    const request = { subject: { type: 'user', id: 'a', properties: { team: 'red' } }, action: 'read', resource: { type: 'doc', id: 'd' } };
    const mapped = decisionInputOf(request);
    if (!mapped.ok) throw new Error(mapped.message);
    expect(loggedInputOf(JSON.parse(JSON.stringify(mapped.input)))).toEqual(mapped);
  });
});
