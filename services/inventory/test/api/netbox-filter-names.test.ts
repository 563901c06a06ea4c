import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { implementedFilters } from '../../src/models/filters.ts';
import { NETBOX_FILTERS } from '../../src/models/netbox-filters.ts';
import { MODELS } from '../../src/models/registry.ts';
import { startApi, type Api } from './helpers.ts';

const UNSUPPORTED = 'This NetBox filter is not supported by this service; the request was refused rather than ignored.';

/**
 * Table-driven over NetBox 4.3's filter names (src/models/netbox-filters.ts, kept as data): every name of
 * every modelled object either filters (200, or a 400 about its value) or is refused with a 400 naming it —
 * never a 5xx, never silently ignored — for a plain value and for `null` (hostile values: fuzz.test.ts).
 */
forEachStorage('inventory API: every NetBox 4.3 filter name of the modelled objects', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('covers every model of the registry that NetBox filters', () => {
    for (const m of MODELS) assert.ok(NETBOX_FILTERS[m.key], `no NetBox filter names for ${m.key}`);
  });

  it('answers each name with a filter result or an explicit refusal', async () => {
    const counts = { implemented: 0, refused: 0 };
    for (const m of MODELS) {
      const implemented = implementedFilters(m);
      const list = `/api/${m.app}/${m.path}/`;
      for (const name of NETBOX_FILTERS[m.key]!) {
        if (name === 'q') continue;
        for (const value of implemented.has(name) ? ['1', 'null'] : ['1']) {
          const r = await api.http.get(`${list}?${name}=${encodeURIComponent(value)}&limit=1`);
          assert.ok(r.status < 500, `${m.key}.${name}=${JSON.stringify(value)}: ${r.status} ${r.text.slice(0, 200)}`);
          if (implemented.has(name)) {
            assert.ok(r.status === 200 || (r.status === 400 && JSON.stringify(r.body) !== JSON.stringify({ [name]: [UNSUPPORTED] })), `${m.key}.${name} is implemented but answered ${r.status} ${r.text.slice(0, 200)}`);
          } else if (value === '1') {
            assert.equal(r.status, 400, `${m.key}.${name} is not implemented and must be refused`);
            assert.deepEqual(r.body, { [name]: [UNSUPPORTED] });
          }
        }
        if (implemented.has(name)) counts.implemented++;
        else counts.refused++;
      }
    }
    console.log(`# NetBox filter names: ${counts.implemented} implemented, ${counts.refused} refused with 400`);
  });
});
