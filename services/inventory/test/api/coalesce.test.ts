import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { coalesce, type RecordedChange } from '../../src/changes/coalesce.ts';
import { pythonIso } from '../../src/changes/time.ts';

const change = (action: RecordedChange['action'], id: number, pre: object | null, post: object | null, deletedData?: object): RecordedChange => ({
  action,
  objectType: 'dcim.device',
  model: 'device',
  objectId: id,
  objectRepr: `d${id}`,
  prechange: pre as any,
  postchange: post as any,
  deletedData: deletedData as any,
});

describe('per-request event coalescing (NetBox enqueue_event)', () => {
  it('create + update gives one created event with the final postchange', () => {
    const out = coalesce([change('create', 1, null, { s: 1 }), change('update', 1, { s: 1 }, { s: 2 })]);
    assert.deepEqual(out, [{ event: 'created', objectType: 'dcim.device', model: 'device', objectId: 1, prechange: null, postchange: { s: 2 }, deletedData: undefined }]);
  });
  it('update + update keeps the first prechange; update + delete gives deleted', () => {
    const out = coalesce([change('update', 1, { s: 0 }, { s: 1 }), change('update', 2, { s: 0 }, { s: 1 }), change('update', 1, { s: 1 }, { s: 2 }), change('delete', 2, { s: 1 }, null, { id: 2 })]);
    assert.deepEqual(
      out.map((e) => [e.objectId, e.event, e.prechange, e.postchange, e.deletedData]),
      [
        [1, 'updated', { s: 0 }, { s: 2 }, undefined],
        [2, 'deleted', { s: 0 }, null, { id: 2 }],
      ],
    );
  });
  it('keeps first-change order across objects', () => {
    const out = coalesce([change('create', 3, null, {}), change('create', 1, null, {}), change('update', 3, {}, {})]);
    assert.deepEqual(out.map((e) => e.objectId), [3, 1]);
  });
  it('formats timestamps as Python isoformat', () => {
    assert.equal(pythonIso(Date.UTC(2026, 2, 6, 15, 11, 23) * 1000 + 503186), '2026-03-06T15:11:23.503186+00:00');
    assert.equal(pythonIso(Date.UTC(2026, 2, 6, 15, 11, 23) * 1000), '2026-03-06T15:11:23+00:00');
  });
});
