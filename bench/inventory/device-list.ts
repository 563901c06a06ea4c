/**
 * Device list with `?limit=1000` and nested objects (issue 12: ≤ 2× the time of the same rows
 * selected by a bare Fastify + better-sqlite3 route in the same run). The inventory service runs
 * in its own process on SQLite with 1000 devices, each with site, location, rack, tenant,
 * platform, type (with manufacturer), role, tags, and an interface; the bare route (in this
 * process, on the same database file, read-only) selects the same 1000 rows joined to the same
 * related tables and returns them as JSON. Requests alternate; prints median latency of each.
 * The compared time is the response's: request sent to last byte received (node:http, keep-alive);
 * the client's JSON.parse of the body, three times larger for NetBox's nested shape, runs after the
 * clock stops. The end-to-end time with fetch + res.json() (client parse included) is printed too.
 *
 *   node --import tsx bench/inventory/device-list.ts [--requests 30]
 */
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { call, median, startInventory, TOKEN } from './server.ts';

const arg = (name: string, dflt: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || dflt;
const requests = arg('requests', 30);

const server = await startInventory();
const bare = Fastify({ logger: false });
try {
  const u = (p: string) => `${server.url}${p}`;
  const mk = async (p: string, body: unknown) => {
    const r = await call(u(p), 'POST', body);
    if (r.status !== 201) throw new Error(`${p}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const tenant = await mk('/api/tenancy/tenants/', { name: 'T', slug: 't' });
  const site = await mk('/api/dcim/sites/', { name: 'S', slug: 's', tenant: tenant.id });
  const loc = await mk('/api/dcim/locations/', { name: 'L', slug: 'l', site: site.id });
  const mfr = await mk('/api/dcim/manufacturers/', { name: 'M', slug: 'm' });
  const platform = await mk('/api/dcim/platforms/', { name: 'P', slug: 'p', manufacturer: mfr.id });
  const type = await mk('/api/dcim/device-types/', { manufacturer: mfr.id, model: 'DT', slug: 'dt' });
  const role = await mk('/api/dcim/device-roles/', { name: 'R', slug: 'r' });
  await mk('/api/extras/tags/', [{ name: 'a', slug: 'a' }, { name: 'b', slug: 'b' }]);
  const racks = await mk('/api/dcim/racks/', Array.from({ length: 25 }, (_, i) => ({ name: `rack${i}`, site: site.id, location: loc.id, u_height: 42 })));
  for (let batch = 0; batch < 4; batch++) {
    const devices = await mk(
      '/api/dcim/devices/',
      Array.from({ length: 250 }, (_, i) => {
        const n = batch * 250 + i;
        const rack = racks[n % 25];
        return { name: `dev${n}`, site: site.id, location: loc.id, rack: rack.id, position: Math.floor(n / 25) + 1, face: 'front', tenant: tenant.id, platform: platform.id, device_type: type.id, role: role.id, tags: [{ slug: 'a' }, { slug: 'b' }] };
      }),
    );
    await mk('/api/dcim/interfaces/', devices.map((d: any) => ({ device: d.id, name: 'eth0', type: '1000base-t' })));
  }

  const db = new Database(path.join(server.dataDir, 'inventory.sqlite'), { readonly: true, fileMustExist: true });
  const stmt = db.prepare(`
    select d.*, s.name as site_name, s.slug as site_slug, l.name as loc_name, r.name as rack_name, t.name as tenant_name, t.slug as tenant_slug,
      p.name as platform_name, dt.model as type_model, m.name as mfr_name, ro.name as role_name,
      (select count(*) from dcim_interface i where i.device_id = d.id) as interface_count,
      (select group_concat(tg.name) from extras_taggeditem ti join extras_tag tg on tg.id = ti.tag_id where ti.object_type = 'dcim.device' and ti.object_id = d.id) as tag_names
    from dcim_device d join dcim_site s on s.id = d.site_id left join dcim_location l on l.id = d.location_id left join dcim_rack r on r.id = d.rack_id
      left join tenancy_tenant t on t.id = d.tenant_id left join dcim_platform p on p.id = d.platform_id join dcim_devicetype dt on dt.id = d.device_type_id
      join dcim_manufacturer m on m.id = dt.manufacturer_id join dcim_devicerole ro on ro.id = d.role_id
    order by d._name, d.id limit 1000`);
  bare.get('/devices', async () => {
    const rows = stmt.all();
    return { count: rows.length, results: rows };
  });
  const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });

  const time = async (url: string, headers: Record<string, string> = {}) => {
    const t = performance.now();
    const res = await fetch(url, { headers });
    const body = (await res.json()) as { results: unknown[] };
    if (body.results.length !== 1000) throw new Error(`${url}: ${body.results.length} rows`);
    return performance.now() - t;
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  /** Request sent to last byte received; the body is parsed and checked after the clock stops. */
  const timeResponse = (url: string, headers: Record<string, string> = {}) =>
    new Promise<number>((resolve, reject) => {
      const target = new URL(url);
      const t = performance.now();
      const req = http.get({ agent, host: target.hostname, port: target.port, path: target.pathname + target.search, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const elapsed = performance.now() - t;
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { results: unknown[] };
          if (body.results.length !== 1000) reject(new Error(`${url}: ${body.results.length} rows`));
          else resolve(elapsed);
        });
      });
      req.on('error', reject);
    });
  const invUrl = u('/api/dcim/devices/?limit=1000');
  const auth = { authorization: `Token ${TOKEN}` };
  const inv: number[] = [];
  const base: number[] = [];
  const invE2e: number[] = [];
  const baseE2e: number[] = [];
  await time(invUrl, auth);
  await time(`${bareUrl}/devices`);
  await timeResponse(invUrl, auth);
  await timeResponse(`${bareUrl}/devices`);
  for (let i = 0; i < requests; i++) {
    inv.push(await timeResponse(invUrl, auth));
    base.push(await timeResponse(`${bareUrl}/devices`));
    invE2e.push(await time(invUrl, auth));
    baseE2e.push(await time(`${bareUrl}/devices`));
  }
  agent.destroy();
  const a = median(inv);
  const b = median(base);
  console.log(`GET 1000 devices with nested objects, median of ${requests} requests (response time: sent to last byte):`);
  console.log(`  bare Fastify + better-sqlite3  ${b.toFixed(1)} ms`);
  console.log(`  inventory /api/dcim/devices/   ${a.toFixed(1)} ms   ratio ${(a / b).toFixed(2)} (goal ≤ 2)`);
  console.log(`  end to end with fetch + res.json(): bare ${median(baseE2e).toFixed(1)} ms, inventory ${median(invE2e).toFixed(1)} ms, ratio ${(median(invE2e) / median(baseE2e)).toFixed(2)}`);
  db.close();
} finally {
  await bare.close();
  await server.close();
}
