import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileConditions, ConditionError, evaluateConditions, InvalidCondition } from '../../src/events/conditions.ts';

const data = {
  name: 'edge1',
  status: { value: 'active', label: 'Active' },
  tags: [{ slug: 'core', name: 'Core' }, { slug: 'prod', name: 'Prod' }],
  vcpus: 4,
  weight: 1.5,
  enabled: true,
  tenant: null,
  custom_fields: { owner: 'ops' },
  zero: 0,
  empty: [],
};
const ev = (c: unknown) => evaluateConditions(compileConditions(c), data);

describe('conditions language', () => {
  it('eq with Python equality (1 == 1.0 == True)', () => {
    assert.equal(ev({ attr: 'status.value', value: 'active' }), true);
    assert.equal(ev({ attr: 'enabled', value: 1 }), true);
    assert.equal(ev({ attr: 'vcpus', value: 4.0 }), true);
    assert.equal(ev({ attr: 'vcpus', value: '4' }), false);
    assert.equal(ev({ attr: 'tenant', value: null }), true);
    assert.equal(ev({ attr: 'tags.slug', value: ['core', 'prod'] }), true);
  });
  it('numeric comparisons, negate, in, contains (str, list, dict keys)', () => {
    assert.equal(ev({ attr: 'vcpus', op: 'gt', value: 2 }), true);
    assert.equal(ev({ attr: 'weight', op: 'lte', value: 1.5 }), true);
    assert.equal(ev({ attr: 'enabled', op: 'gte', value: 1 }), true);
    assert.equal(ev({ attr: 'vcpus', op: 'lt', value: 4, negate: true }), true);
    assert.equal(ev({ attr: 'status.value', op: 'in', value: ['active', 'staged'] }), true);
    assert.equal(ev({ attr: 'name', op: 'contains', value: 'dge' }), true);
    assert.equal(ev({ attr: 'tags.slug', op: 'contains', value: 'prod' }), true);
    assert.equal(ev({ attr: 'custom_fields', op: 'contains', value: 'owner' }), true);
    assert.equal(ev({ attr: 'custom_fields', op: 'contains', value: 'ops' }), false);
    assert.equal(ev({ attr: 'empty.slug', value: [] }), true);
  });
  it('regex is anchored at the start only (re.match) and accepts Python syntax', () => {
    assert.equal(ev({ attr: 'name', op: 'regex', value: 'edge' }), true);
    assert.equal(ev({ attr: 'name', op: 'regex', value: 'dge' }), false);
    assert.equal(ev({ attr: 'name', op: 'regex', value: '(?P<x>e)dge\\d' }), true);
    assert.equal(ev({ attr: 'name', op: 'regex', value: '(?i)EDGE' }), true);
  });
  it('and/or nesting with short-circuit; [] semantics', () => {
    assert.equal(ev({ and: [{ attr: 'status.value', value: 'active' }, { or: [{ attr: 'vcpus', value: 8 }, { attr: 'tags.slug', op: 'contains', value: 'core' }] }] }), true);
    assert.equal(ev({ or: [{ attr: 'vcpus', value: 4 }, { attr: 'missing', value: 1 }] }), true, 'or stops at the first true');
    assert.equal(ev({ and: [] }), true);
    assert.equal(ev({ or: [] }), false);
    assert.equal(ev(null), true);
    assert.equal(ev({}), true);
  });
  it('evaluation errors raise InvalidCondition (fail closed) and are never negated', () => {
    assert.throws(() => ev({ attr: 'missing', value: 1 }), InvalidCondition);
    assert.throws(() => ev({ attr: 'missing', value: 1, negate: true }), InvalidCondition);
    assert.throws(() => ev({ attr: 'tenant.name', value: 'x' }), InvalidCondition);
    assert.throws(() => ev({ attr: 'name', op: 'gt', value: 1 }), InvalidCondition);
    assert.throws(() => ev({ attr: 'vcpus', op: 'contains', value: 1 }), InvalidCondition);
    assert.throws(() => ev({ attr: 'vcpus', op: 'regex', value: '4' }), InvalidCondition);
    assert.throws(() => ev({ attr: 'name.x', value: 1 }), InvalidCondition);
    assert.throws(() => ev({ attr: 'zero.x', value: 1 }), InvalidCondition);
  });
  it('malformed conditions are refused at compile time', () => {
    const bad = [
      'x',
      [1],
      { attr: 'x' },
      { AND: [] },
      { and: {} },
      { xor: [] },
      { attr: 'x', value: 1, op: 'nope' },
      { attr: 'x', value: 'a', op: 'gt' },
      { attr: 'x', value: true, op: 'in' },
      { attr: 'x', value: null, op: 'contains' },
      { attr: 'x', value: { a: 1 } },
      { attr: 'x', value: 1, extra: 1 },
      { attr: 'x', value: '(unclosed', op: 'regex' },
      { and: [{ attr: 'x', value: 1 }, { OR: [] }] },
    ];
    for (const c of bad) assert.throws(() => compileConditions(c as never), ConditionError, JSON.stringify(c));
    assert.equal(compileConditions([] as never), null);
  });
});
