import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jsonContains } from '@svc/storage';

describe('jsonContains (PostgreSQL @> semantics)', () => {
  it('matches nested objects and arrays like jsonb', () => {
    assert.equal(jsonContains({ a: 1, b: { c: [1, 2, 3] } }, { b: { c: [3, 1] } }), true);
    assert.equal(jsonContains({ a: 1 }, {}), true);
    assert.equal(jsonContains({ a: 1 }, { a: '1' }), false);
    assert.equal(jsonContains({ a: 1.0 }, { a: 1 }), true);
    assert.equal(jsonContains([1, 2], 1), true);
    assert.equal(jsonContains({ a: [1, 2] }, { a: 1 }), false);
    assert.equal(jsonContains({ a: [[1, 2]] }, { a: [[2]] }), true);
    assert.equal(jsonContains({ a: null }, { a: null }), true);
    assert.equal(jsonContains({}, { a: null }), false);
    assert.equal(jsonContains('x', 'x'), true);
  });
});
