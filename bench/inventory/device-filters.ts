/**
 * The device list with 20 filters applied over 100,000 devices (issue 24), on SQLite: the REST list
 * (`/api/dcim/devices/?…&limit=50`) and the UI's device list page (`/dcim/devices/?…&per_page=50`), each as a
 * ratio to the same query written by hand (better-sqlite3 in a bare Fastify route on the same database file,
 * read-only) in the same run. Requests alternate; prints p50 and p99 of each (response time: sent to last byte).
 *
 * The reference objects are made through the API; the 100,000 devices are written straight into the
 * database file while the service is stopped (through the API it would take long, and it is the read that is measured).
 *
 *   node --import tsx bench/inventory/device-filters.ts [--devices 100000] [--requests 200]
 */
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { call, median, startInventory, TOKEN, type BenchServer } from './server.ts';
import { naturalize } from '../../services/inventory/src/models/values.ts';

const arg = (name: string, dflt: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || dflt;
const DEVICES = arg('devices', 100_000);
const REQUESTS = arg('requests', 200);
const p99 = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

let server: BenchServer = await startInventory([], { keepData: true });
const dataDir = server.dataDir;
const bare = Fastify({ logger: false });
try {
  const u = (p: string) => `${server.url}${p}`;
  const mk = async (p: string, body: unknown) => {
    const r = await call(u(p), 'POST', body);
    if (r.status !== 201) throw new Error(`${p}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const regions = await mk('/api/dcim/regions/', [{ name: 'EU', slug: 'eu' }, { name: 'US', slug: 'us' }]);
  const tenants = await mk('/api/tenancy/tenants/', Array.from({ length: 10 }, (_, i) => ({ name: `T${i}`, slug: `t${i}` })));
  const sites = await mk('/api/dcim/sites/', Array.from({ length: 20 }, (_, i) => ({ name: `S${i}`, slug: `s${i}`, region: regions[i % 2].id, tenant: tenants[i % 10].id })));
  const mfrs = await mk('/api/dcim/manufacturers/', [{ name: 'M0', slug: 'm0' }, { name: 'M1', slug: 'm1' }]);
  const types = await mk('/api/dcim/device-types/', Array.from({ length: 6 }, (_, i) => ({ manufacturer: mfrs[i % 2].id, model: `DT${i}`, slug: `dt${i}` })));
  const roles = await mk('/api/dcim/device-roles/', Array.from({ length: 5 }, (_, i) => ({ name: `R${i}`, slug: `r${i}` })));
  const platforms = await mk('/api/dcim/platforms/', Array.from({ length: 4 }, (_, i) => ({ name: `P${i}`, slug: `p${i}` })));
  await server.close();

  // 100,000 devices straight into the file (the service is stopped).
  const file = path.join(dataDir, 'inventory.sqlite');
  const w = new Database(file);
  const now = new Date().toISOString();
  const statuses = ['active', 'planned', 'staged', 'offline', 'failed'];
  const ins = w.prepare(`insert into dcim_device (name, _name, site_id, device_type_id, role_id, status, serial, description, comments, custom_fields, created, last_updated,
    platform_id, tenant_id, asset_tag, airflow) values (?, ?, ?, ?, ?, ?, ?, '', '', '{}', ?, ?, ?, ?, ?, ?)`);
  w.transaction(() => {
    for (let n = 0; n < DEVICES; n++) {
      const name = `dev${n}`;
      ins.run(name, naturalize(name), sites[n % 20].id, types[n % 6].id, roles[n % 5].id, statuses[n % 5], `SN${n % 997}`, now, now, n % 3 ? platforms[n % 4].id : null, n % 7 ? tenants[n % 10].id : null, n % 11 ? null : `AT${n}`, n % 2 ? 'front-to-rear' : null);
    }
  })();
  w.close();
  server = await startInventory([], { dataDir, keepData: false });

  // Twenty filters, NetBox's names; the same conditions written by hand below.
  const siteIds = [sites[0].id, sites[2].id, sites[4].id, sites[6].id];
  const q = new URLSearchParams();
  for (const s of siteIds) q.append('site_id', String(s));
  q.append('status', 'active');
  q.append('status', 'planned');
  q.append('status', 'offline');
  q.append('role_id', String(roles[0].id));
  q.append('role_id', String(roles[2].id));
  q.append('role_id', String(roles[4].id));
  q.append('device_type_id__n', String(types[5].id));
  q.append('manufacturer_id', String(mfrs[0].id));
  q.append('region_id', String(regions[0].id));
  q.append('tenant_id__n', String(tenants[9].id));
  q.append('platform_id__n', String(platforms[3].id));
  q.append('serial__ic', 'sn');
  q.append('name__isw', 'dev');
  q.append('has_primary_ip', 'false');
  q.append('asset_tag__empty', 'true');
  q.append('id__gt', '0');
  if ([...q.keys()].length !== 20) throw new Error(`${[...q.keys()].length} filters`);
  const filters = q.toString();

  const db = new Database(path.join(dataDir, 'inventory.sqlite'), { readonly: true, fileMustExist: true });
  const hand = db.prepare(`
    select d.*, s.name as site_name, s.slug as site_slug, t.name as tenant_name, p.name as platform_name, dt.model as type_model, m.name as mfr_name, ro.name as role_name
    from dcim_device d join dcim_site s on s.id = d.site_id left join tenancy_tenant t on t.id = d.tenant_id left join dcim_platform p on p.id = d.platform_id
      join dcim_devicetype dt on dt.id = d.device_type_id join dcim_manufacturer m on m.id = dt.manufacturer_id join dcim_devicerole ro on ro.id = d.role_id
    where d.site_id in (?, ?, ?, ?) and d.status in ('active', 'planned', 'offline') and d.role_id in (?, ?, ?) and d.device_type_id <> ?
      and dt.manufacturer_id = ? and s.region_id = ? and (d.tenant_id is null or d.tenant_id <> ?) and (d.platform_id is null or d.platform_id <> ?)
      and lower(d.serial) like '%sn%' and lower(d.name) like 'dev%' and d.primary_ip4_id is null and d.primary_ip6_id is null
      and (d.asset_tag is null or d.asset_tag = '') and d.id > 0
    order by d._name, d.id limit 50`);
  const handCount = db.prepare(`select count(*) as n from dcim_device d join dcim_site s on s.id = d.site_id join dcim_devicetype dt on dt.id = d.device_type_id
    where d.site_id in (?, ?, ?, ?) and d.status in ('active', 'planned', 'offline') and d.role_id in (?, ?, ?) and d.device_type_id <> ?
      and dt.manufacturer_id = ? and s.region_id = ? and (d.tenant_id is null or d.tenant_id <> ?) and (d.platform_id is null or d.platform_id <> ?)
      and lower(d.serial) like '%sn%' and lower(d.name) like 'dev%' and d.primary_ip4_id is null and d.primary_ip6_id is null
      and (d.asset_tag is null or d.asset_tag = '') and d.id > 0`);
  const params = [...siteIds, roles[0].id, roles[2].id, roles[4].id, types[5].id, mfrs[0].id, regions[0].id, tenants[9].id, platforms[3].id];
  bare.get('/devices', async () => ({ count: (handCount.get(...params) as { n: number }).n, results: hand.all(...params) }));
  const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });

  // A UI session: the login form, then its cookie.
  const loginPage = await fetch(u('/ui/login'));
  const cookie = loginPage.headers.getSetCookie()[0]!.split(';')[0]!;
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(await loginPage.text())![1]!;
  const login = await fetch(u('/ui/login'), { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf_token: csrf, token: TOKEN, next: '/ui/' }).toString() });
  const session = login.headers.getSetCookie()[0]!.split(';')[0]!;

  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const timeResponse = (url: string, headers: Record<string, string>, check: (body: string) => void) =>
    new Promise<number>((resolve, reject) => {
      const target = new URL(url);
      const t = performance.now();
      const req = http.get({ agent, host: target.hostname, port: target.port, path: target.pathname + target.search, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const elapsed = performance.now() - t;
          try {
            if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
            check(Buffer.concat(chunks).toString('utf8'));
            resolve(elapsed);
          } catch (err) {
            reject(err);
          }
        });
      });
      req.on('error', reject);
    });
  let expected = -1;
  const checkJson = (text: string) => {
    const b = JSON.parse(text) as { count: number; results: unknown[] };
    if (expected < 0) expected = b.count;
    if (b.count !== expected || b.results.length !== Math.min(50, expected)) throw new Error(`count ${b.count}, ${b.results.length} rows, expected ${expected}`);
  };
  const checkPage = (text: string) => {
    if (!text.includes(`${expected} devices`)) throw new Error('the page does not show the expected count');
  };
  const apiUrl = u(`/api/dcim/devices/?${filters}&limit=50`);
  const uiUrl = u(`/dcim/devices/?${filters}&per_page=50`);
  const auth = { authorization: `Token ${TOKEN}` };
  for (let i = 0; i < 5; i++) {
    await timeResponse(`${bareUrl}/devices`, {}, checkJson);
    await timeResponse(apiUrl, auth, checkJson);
    await timeResponse(uiUrl, { cookie: session }, checkPage);
  }
  const handT: number[] = [];
  const apiT: number[] = [];
  const uiT: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    handT.push(await timeResponse(`${bareUrl}/devices`, {}, checkJson));
    apiT.push(await timeResponse(apiUrl, auth, checkJson));
    uiT.push(await timeResponse(uiUrl, { cookie: session }, checkPage));
  }
  agent.destroy();
  const row = (label: string, xs: number[]) =>
    console.log(`  ${label.padEnd(34)} p50 ${median(xs).toFixed(1).padStart(7)} ms  p99 ${p99(xs).toFixed(1).padStart(7)} ms  ratio p50 ${(median(xs) / median(handT)).toFixed(2)}  p99 ${(p99(xs) / p99(handT)).toFixed(2)}`);
  console.log(`${DEVICES} devices, 20 filters matching ${expected}, first page of 50, ${REQUESTS} requests each (alternating; sent to last byte):`);
  row('hand-written SQL (bare Fastify)', handT);
  row('inventory /api/dcim/devices/', apiT);
  row('inventory UI /dcim/devices/', uiT);
  db.close();
} finally {
  await bare.close();
  await server.close();
}
