import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { ADMIN_TOKEN, startApi, type Api } from './helpers.ts';

/**
 * A small client that behaves as NetBox's Python client (pynetbox) does: token auth, JSON,
 * version check from API-Version, choices from OPTIONS, `next`-link and threaded paging,
 * lazy loading of nested records through their `url`, `filter().delete()`.
 */
class NetBoxClient {
  version = '';
  constructor(readonly base: string, readonly token: string) {}

  async req(method: string, url: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
    const full = url.startsWith('http') ? url : `${this.base}${url}`;
    const res = await fetch(full, {
      method,
      headers: { authorization: `Token ${this.token}`, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    this.version = res.headers.get('api-version') ?? this.version;
    const text = await res.text();
    const parsed = text ? JSON.parse(text) : undefined;
    if (res.status >= 400) throw Object.assign(new Error(`${method} ${url}: ${res.status} ${text}`), { status: res.status, body: parsed });
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** pynetbox's Api.version, compared as a version. */
  async apiVersion(): Promise<[number, number]> {
    await this.req('GET', '/api/');
    const [maj, min] = this.version.split('.').map(Number);
    return [maj!, min!];
  }

  /** Endpoint.choices(): OPTIONS → actions.POST.<field>.choices. */
  async choices(path: string): Promise<Record<string, Array<{ value: string; display_name: string }>>> {
    const meta = (await this.req('OPTIONS', path)).body;
    const post = meta.actions?.POST ?? {};
    return Object.fromEntries(Object.entries(post).filter(([, f]: any) => f.choices).map(([k, f]: any) => [k, f.choices]));
  }

  /** Endpoint.all() without threading: follows `next`. */
  async *all(path: string, limit = 50): AsyncGenerator<any> {
    let url: string | null = `${path}${path.includes('?') ? '&' : '?'}limit=${limit}`;
    while (url) {
      const page: any = (await this.req('GET', url)).body;
      yield* page.results;
      url = page.next;
    }
  }

  /** threading=True: first page for the count, then every other page at once by offset. */
  async allThreaded(path: string, limit: number): Promise<any[]> {
    const first = (await this.req('GET', `${path}?limit=${limit}&offset=0`)).body;
    const offsets = [];
    for (let o = limit; o < first.count; o += limit) offsets.push(o);
    const pages = await Promise.all(offsets.map((o) => this.req('GET', `${path}?limit=${limit}&offset=${o}`)));
    return [...first.results, ...pages.flatMap((p) => p.body.results)];
  }

  /** Record.__getattr__ on a nested (brief) record: a missing attribute loads the full object from its url. */
  async full(record: { url: string }): Promise<any> {
    return (await this.req('GET', record.url)).body;
  }

  /** RecordSet.delete(): list what the filter matches, then one bulk DELETE of those ids. */
  async filterDelete(path: string, query: string): Promise<number> {
    const ids: number[] = [];
    for await (const r of this.all(`${path}?${query}`)) ids.push(r.id);
    if (ids.length) await this.req('DELETE', path, ids.map((id) => ({ id })));
    return ids.length;
  }
}

forEachStorage('NetBox client behaviour (pynetbox habits)', (storage) => {
  let api: Api;
  let nb: NetBoxClient;
  let ids: { site: number; type: number; role: number; region: number };
  before(async () => {
    api = await startApi(storage);
    nb = new NetBoxClient(api.server.url, ADMIN_TOKEN);
    const region = (await nb.req('POST', '/api/dcim/regions/', { name: 'Lab', slug: 'lab' })).body;
    const site = (await nb.req('POST', '/api/dcim/sites/', { name: 'HQ', slug: 'hq', region: region.id })).body;
    const mfr = (await nb.req('POST', '/api/dcim/manufacturers/', { name: 'Juniper', slug: 'juniper' })).body;
    const type = (await nb.req('POST', '/api/dcim/device-types/', { manufacturer: mfr.id, model: 'MX', slug: 'mx' })).body;
    const role = (await nb.req('POST', '/api/dcim/device-roles/', { name: 'Edge', slug: 'edge' })).body;
    ids = { site: site.id, type: type.id, role: role.id, region: region.id };
    await nb.req('POST', '/api/dcim/devices/', Array.from({ length: 123 }, (_, i) => ({ name: `edge-${i}`, site: site.id, device_type: type.id, role: role.id })));
  });
  after(() => api.close());

  it('reads API-Version as a version that passes the client check', async () => {
    const [maj, min] = await nb.apiVersion();
    assert.ok(maj > 4 || (maj === 4 && min >= 3), nb.version);
    const status = (await nb.req('GET', '/api/status/')).body;
    assert.equal(status['netbox-version'].split('.').slice(0, 2).join('.'), nb.version);
  });

  it('reads choices from OPTIONS and uses them', async () => {
    const choices = await nb.choices('/api/dcim/devices/');
    const planned = choices.status!.find((c) => c.display_name === 'Planned')!;
    assert.equal(planned.value, 'planned');
    assert.ok(choices.airflow!.some((c) => c.value === 'front-to-rear'));
    const ipChoices = await nb.choices('/api/ipam/ip-addresses/');
    assert.ok(ipChoices.role!.some((c) => c.value === 'vip'));
  });

  it('walks next links and fetches pages concurrently, with the same result', async () => {
    const seq: number[] = [];
    for await (const d of nb.all('/api/dcim/devices/', 20)) seq.push(d.id);
    assert.equal(seq.length, 123);
    const threaded = (await nb.allThreaded('/api/dcim/devices/', 25)).map((d) => d.id);
    assert.deepEqual(threaded, seq);
    assert.equal(new Set(seq).size, 123);
  });

  it('lazily loads a nested record through its url', async () => {
    const d = (await nb.req('GET', '/api/dcim/devices/?name=edge-7')).body.results[0];
    assert.equal('region' in d.site, false);
    const site = await nb.full(d.site);
    assert.equal(site.region.id, ids.region);
    const region = await nb.full(site.region);
    assert.equal(region.site_count, 1);
  });

  it('assigns a primary IP the way scripts do', async () => {
    const d = (await nb.req('GET', '/api/dcim/devices/?name=edge-1')).body.results[0];
    const iface = (await nb.req('POST', '/api/dcim/interfaces/', { device: d.id, name: 'lo0', type: 'virtual' })).body;
    const ip = (await nb.req('POST', '/api/ipam/ip-addresses/', { address: '192.0.2.1/32', assigned_object_type: 'dcim.interface', assigned_object_id: iface.id })).body;
    const saved = (await nb.req('PATCH', d.url, { primary_ip4: ip.id })).body;
    assert.equal(saved.primary_ip4.address, '192.0.2.1/32');
    assert.equal(saved.primary_ip.id, ip.id);
    const again = await nb.full(saved.primary_ip4);
    assert.equal(again.assigned_object.device.id, d.id);
  });

  it('allocates from available-ips from many clients at once', async () => {
    const p = (await nb.req('POST', '/api/ipam/prefixes/', { prefix: '198.18.0.0/24' })).body;
    const clients = Array.from({ length: 8 }, () => new NetBoxClient(api.server.url, ADMIN_TOKEN));
    const got = await Promise.all(clients.flatMap((c) => [1, 2, 3].map(() => c.req('POST', `${p.url}available-ips/`, { status: 'active' }))));
    const addrs = got.map((r) => r.body.address);
    assert.equal(new Set(addrs).size, 24);
    const left = (await nb.req('GET', `${p.url}available-ips/?limit=0`)).body;
    assert.equal(left.length, 254 - 24);
  });

  it('filter(<unknown NetBox filter>).delete() deletes nothing', async () => {
    await assert.rejects(nb.filterDelete('/api/dcim/devices/', 'tenant=nobody'), (e: any) => e.status === 400 && 'tenant' in e.body);
    assert.equal((await nb.req('GET', '/api/dcim/devices/?limit=1')).body.count, 123);
    assert.equal(await nb.filterDelete('/api/dcim/devices/', 'name__isw=edge-12'), 4);
    assert.equal((await nb.req('GET', '/api/dcim/devices/?limit=1')).body.count, 119);
  });
});
