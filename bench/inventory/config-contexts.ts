/**
 * The cost of config contexts on the device list (issue 24): `/api/dcim/devices/?limit=50` with every device's
 * `config_context` merged from 50 active contexts (assigned by region, site, role, platform, tag, tenant), as a
 * ratio to the same list with `?exclude=config_context` in the same run (requests alternate, pages rotate).
 * Also `render-config` of one device as a ratio to its plain detail GET. Prints p50 and p99 of each and the load.
 *
 *   node --import tsx bench/inventory/config-contexts.ts [--devices 2000] [--requests 200]
 */
import os from 'node:os';
import { call, median, startInventory } from './server.ts';

const arg = (name: string, dflt: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || dflt;
const DEVICES = arg('devices', 2000);
const REQUESTS = arg('requests', 200);
const p99 = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

const server = await startInventory();
try {
  const u = (p: string) => `${server.url}${p}`;
  const mk = async (p: string, body: unknown) => {
    const r = await call(u(p), 'POST', body);
    if (r.status !== 201) throw new Error(`${p}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return r.body;
  };
  const regions = await mk('/api/dcim/regions/', [{ name: 'EU', slug: 'eu' }, { name: 'US', slug: 'us' }]);
  const tenants = await mk('/api/tenancy/tenants/', Array.from({ length: 5 }, (_, i) => ({ name: `T${i}`, slug: `t${i}` })));
  const sites = await mk('/api/dcim/sites/', Array.from({ length: 20 }, (_, i) => ({ name: `S${i}`, slug: `s${i}`, region: regions[i % 2].id })));
  const mfr = await mk('/api/dcim/manufacturers/', { name: 'M', slug: 'm' });
  const type = await mk('/api/dcim/device-types/', { manufacturer: mfr.id, model: 'DT', slug: 'dt' });
  const roles = await mk('/api/dcim/device-roles/', Array.from({ length: 5 }, (_, i) => ({ name: `R${i}`, slug: `r${i}` })));
  const platforms = await mk('/api/dcim/platforms/', Array.from({ length: 4 }, (_, i) => ({ name: `P${i}`, slug: `p${i}` })));
  const tags = await mk('/api/extras/tags/', Array.from({ length: 5 }, (_, i) => ({ name: `G${i}`, slug: `g${i}` })));
  for (let start = 0; start < DEVICES; start += 1000) {
    await mk(
      '/api/dcim/devices/',
      Array.from({ length: Math.min(1000, DEVICES - start) }, (_, j) => {
        const n = start + j;
        return { name: `dev${n}`, site: sites[n % 20].id, device_type: type.id, role: roles[n % 5].id, platform: platforms[n % 4].id, tenant: tenants[n % 5].id, tags: [tags[n % 5].id], local_context_data: n % 3 ? null : { local: { n } } };
      }),
    );
  }
  const dims: Array<[string, any[]]> = [['regions', regions], ['sites', sites], ['roles', roles], ['platforms', platforms], ['tags', tags], ['tenants', tenants]];
  await mk(
    '/api/extras/config-contexts/',
    Array.from({ length: 50 }, (_, i) => {
      const [dim, objs] = dims[i % dims.length]!;
      const ref = dim === 'tags' ? objs[i % objs.length].slug : objs[i % objs.length].id;
      return { name: `ctx${i}`, weight: 1000 + (i % 7), [dim]: [ref], data: { ntp: [`10.0.${i}.1`], dns: { [`k${i % 4}`]: i }, [`c${i}`]: { deep: { v: i } } } };
    }),
  );
  const dev = (await call(u('/api/dcim/devices/?limit=1'), 'GET')).body.results[0];
  const tpl = await mk('/api/extras/config-templates/', { name: 'bench', template_code: 'hostname {{ device.name }}\n{% for s in ntp %}ntp server {{ s }}\n{% endfor %}' });
  await call(u(`/api/dcim/devices/${dev.id}/`), 'PATCH', { config_template: tpl.id });

  const timed = async (path: string, method = 'GET', body?: unknown) => {
    const t = process.hrtime.bigint();
    const r = await call(u(path), method, body);
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const withCtx: number[] = [];
  const without: number[] = [];
  const render: number[] = [];
  const detail: number[] = [];
  const pages = Math.floor(DEVICES / 50);
  for (let i = 0; i < 10; i++) await timed(`/api/dcim/devices/?limit=50&offset=${(i % pages) * 50}`);
  for (let i = 0; i < REQUESTS; i++) {
    const off = (i % pages) * 50;
    without.push(await timed(`/api/dcim/devices/?limit=50&offset=${off}&exclude=config_context`));
    withCtx.push(await timed(`/api/dcim/devices/?limit=50&offset=${off}`));
    detail.push(await timed(`/api/dcim/devices/${dev.id}/?exclude=config_context`));
    render.push(await timed(`/api/dcim/devices/${dev.id}/render-config/`, 'POST', {}));
  }
  const row = (name: string, xs: number[], base: number[]) =>
    `| ${name} | ${median(xs).toFixed(1)} ms | ${p99(xs).toFixed(1)} ms | ${(median(xs) / median(base)).toFixed(2)} | ${(p99(xs) / p99(base)).toFixed(2)} |`;
  console.log(`${DEVICES} devices, 50 active config contexts, ${REQUESTS} requests each, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')}`);
  console.log('| | p50 | p99 | ratio p50 | ratio p99 |\n|---|---|---|---|---|');
  console.log(row('list ?exclude=config_context (baseline)', without, without));
  console.log(row('list with config_context', withCtx, without));
  console.log(row('device GET (baseline)', detail, detail));
  console.log(row('render-config', render, detail));
} finally {
  await server.close();
}
