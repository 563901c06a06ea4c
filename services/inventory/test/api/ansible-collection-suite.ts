import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { client, onStorage, startTestServer, type StorageKind, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { ADMIN_TOKEN, LOOPBACK_ONLY } from './helpers.ts';

/**
 * Ansible's `netbox.netbox` collection, the real one, against the service (issue 24): `ansible-playbook` runs
 * fixtures/ansible/playbook.yml (its modules create every object, a second pass must change nothing, then updates,
 * first-available allocations, `nb_lookup` lookups and removals), and `ansible-inventory` reads the result through the
 * `nb_inventory` plugin, with and without `fetch_all`. Debian bookworm's packages (`apt-get install ansible
 * python3-pynetbox`: ansible-core 2.14, netbox.netbox 3.13.0, pynetbox 7.0.0) are what CI installs. Skipped when
 * `ansible-playbook` or the collection is missing.
 *
 * A minute or two per storage: ansible-collection.test.ts runs it on SQLite, ansible-collection-postgres.test.ts on
 * PostgreSQL, each file within the test runner's time limit. The second, idempotent pass runs on SQLite only (the
 * modules compare what they read with what they want; the storage plays no part).
 *
 * The service runs with `--login-required false` (NetBox's LOGIN_REQUIRED = False): pynetbox before 7.3.4 asks for
 * `/api/` without its token to read the API version, which NetBox 4 refuses with LOGIN_REQUIRED on.
 */

const FIXTURES = path.join(import.meta.dirname, 'fixtures', 'ansible');

function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

/** Environment for the Ansible children: quiet, JSON output, nothing read from or written to the user's ~/.ansible. */
function ansibleEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(ANSIBLE_|https?_proxy$|all_proxy$)/i.test(k)) env[k] = v;
  // ANSIBLE_HOME moves ~/.ansible; collections installed there (ansible-galaxy) are still looked for where they are.
  const collections = process.env.ANSIBLE_COLLECTIONS_PATH ?? process.env.ANSIBLE_COLLECTIONS_PATHS ?? [path.join(os.homedir(), '.ansible', 'collections'), '/usr/share/ansible/collections'].join(':');
  return {
    ...env,
    ANSIBLE_COLLECTIONS_PATH: collections,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    ANSIBLE_CONFIG: path.join(home, 'ansible.cfg'),
    ANSIBLE_HOME: home,
    ANSIBLE_LOCAL_TEMP: path.join(home, 'tmp'),
    ANSIBLE_REMOTE_TEMP: path.join(home, 'remote-tmp'),
    ANSIBLE_STDOUT_CALLBACK: 'json',
    ANSIBLE_LOAD_CALLBACK_PLUGINS: '1',
    ANSIBLE_NOCOLOR: '1',
    ANSIBLE_FORCE_COLOR: '0',
    ANSIBLE_RETRY_FILES_ENABLED: '0',
    ANSIBLE_LOCALHOST_WARNING: '0',
    ANSIBLE_INVENTORY_UNPARSED_WARNING: '0',
    ANSIBLE_DEPRECATION_WARNINGS: '0',
    ANSIBLE_SYSTEM_WARNINGS: '0',
    ANSIBLE_HOST_KEY_CHECKING: '0',
    ANSIBLE_PIPELINING: '1',
    ANSIBLE_GATHERING: 'explicit',
    ANSIBLE_CACHE_PLUGIN: 'memory',
  };
}

/** Process groups of the Ansible children still running (killed when the suite ends, whatever happened). */
const running = new Set<number>();

/** Runs an Ansible command in its own process group; on timeout the whole group (its forked workers too) is killed. */
function run(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (c: Buffer) => out.push(c));
    child.stderr!.on('data', (c: Buffer) => err.push(c));
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    running.add(child.pid!);
    const timer = setTimeout(() => {
      err.push(Buffer.from(`\n[killed after ${opts.timeoutMs} ms]`));
      killGroup();
    }, opts.timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child.pid!);
      killGroup();
      resolve({ code: code ?? (signal ? 128 : -1), stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

function killRunning(): void {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  running.clear();
}
process.once('exit', killRunning);

const playbookBin = which('ansible-playbook');
const inventoryBin = which('ansible-inventory');
let versions = '';
let skip: string | false = false;
if (!playbookBin || !inventoryBin) {
  skip = 'ansible-playbook is not installed: apt-get install -y ansible python3-pynetbox (Debian) to run the netbox.netbox collection test';
} else {
  try {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'inventory-ansible-probe-'));
    fs.writeFileSync(path.join(home, 'ansible.cfg'), '');
    const env = ansibleEnv(home);
    const out = execFileSync(which('ansible-galaxy') ?? 'ansible-galaxy', ['collection', 'list', 'netbox.netbox', '--format', 'json'], { env, encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
    const found = Object.values(JSON.parse(out) as Record<string, Record<string, { version: string }>>).flatMap((c) => Object.entries(c));
    const shebang = fs.readFileSync(playbookBin, 'utf8').split('\n', 1)[0]!.replace(/^#!\s*/, '').split(/\s+/);
    const py = shebang[0] === '/usr/bin/env' ? shebang[1]! : shebang[0]!;
    const pynetbox = execFileSync(py, ['-c', 'import pynetbox; print(pynetbox.__version__)'], { env, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    fs.rmSync(home, { recursive: true, force: true });
    if (!found.length) skip = 'the netbox.netbox collection is not installed (Debian: apt-get install -y ansible)';
    else versions = `netbox.netbox ${found[0]![1].version}, pynetbox ${pynetbox}`;
  } catch (err) {
    skip = `ansible is installed but the netbox.netbox collection or pynetbox is not usable (apt-get install -y ansible python3-pynetbox): ${String(err).split('\n')[0]}`;
  }
}
if (skip) console.log(`# SKIP netbox.netbox collection test: ${skip}`);
else console.log(`# netbox.netbox collection test with ${versions}`);

/** About 100 module runs at ~0.5 s of CPU each: minutes on a loaded machine. */
const PLAYBOOK_TIMEOUT_MS = 420_000;
const TEST_TIMEOUT_MS = 480_000;

interface TaskResult {
  name: string;
  results: Array<{ changed: boolean; failed: boolean; skipped: boolean; msg?: string; res: any }>;
}

/** The json callback's plays → one entry per task (a loop's items as several results). */
function tasksOf(report: any): TaskResult[] {
  const out: TaskResult[] = [];
  for (const play of report.plays) {
    for (const t of play.tasks) {
      const r = t.hosts.localhost;
      if (!r) continue;
      const items = Array.isArray(r.results) && r.results.length ? r.results : [r];
      out.push({ name: t.task.name, results: items.map((i: any) => ({ changed: Boolean(i.changed), failed: Boolean(i.failed), skipped: Boolean(i.skipped), msg: i.msg, res: i })) });
    }
  }
  return out;
}

/** The suite on one storage (a file per storage calls it). */
export function ansibleSuite(only: StorageKind): void {
  describe('Ansible netbox.netbox collection against the inventory service', { skip }, () => {
    onStorage(only, 'ansible-playbook and ansible-inventory', (storage) => {
      let srv: TestServer;
      let home: string;
      let env: NodeJS.ProcessEnv;
      let api: ReturnType<typeof client>;
      /** Every request the collection made: method, URL, status. */
      const seen: Array<{ method: string; url: string; status: number }> = [];
      const tasks: TaskResult[] = [];
      const timings: Record<string, number> = {};

      before(async () => {
        srv = await startTestServer(
          'inventory_ansible',
          storage,
          async (cfg) => {
            const app = await buildApp(cfg);
            app.addHook('onResponse', async (req, reply) => {
              // The test's own requests (fetch: user agent "node") are not the collection's.
              if (req.headers['user-agent'] !== 'node') seen.push({ method: req.method, url: req.url, status: reply.statusCode });
            });
            return app;
          },
          { flags: { adminToken: ADMIN_TOKEN, loginRequired: 'false', ...LOOPBACK_ONLY }, runWorkers: false },
        );
        api = client(srv.url, { authorization: `Token ${ADMIN_TOKEN}` });
        home = fs.mkdtempSync(path.join(os.tmpdir(), 'inventory-ansible-'));
        fs.mkdirSync(path.join(home, 'tmp'));
        fs.writeFileSync(path.join(home, 'ansible.cfg'), '');
        fs.writeFileSync(path.join(home, 'vars.json'), JSON.stringify({ nb_url: srv.url, nb_token: ADMIN_TOKEN }));
        // localhost with the interpreter ansible-playbook itself runs on (where pynetbox is), never over ssh.
        fs.writeFileSync(path.join(home, 'hosts.yml'), 'all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: "{{ ansible_playbook_python }}"\n');
        env = ansibleEnv(home);
      });

      after(async () => {
        killRunning();
        if (Object.keys(timings).length) console.log(`# ansible timings [${storage}]: ${JSON.stringify(timings)}`);
        await srv?.close();
        if (home) fs.rmSync(home, { recursive: true, force: true });
      });

      const task = (name: string): TaskResult => {
        const t = tasks.find((x) => x.name === name);
        assert.ok(t, `task "${name}" ran (${tasks.map((x) => x.name).join(', ')})`);
        return t;
      };
      const changed = (name: string) => task(name).results.map((r) => r.changed);

      /** One ansible-playbook run of fixtures/ansible/playbook.yml; its tasks, every one of them without failure. */
      const playbook = async (pass: 'create' | 'again' | 'changes'): Promise<TaskResult[]> => {
        const t0 = Date.now();
        const args = ['-i', path.join(home, 'hosts.yml'), '-e', `@${path.join(home, 'vars.json')}`, '-e', `pass_name=${pass}`, path.join(FIXTURES, 'playbook.yml')];
        const r = await run(playbookBin!, args, { cwd: home, env, timeoutMs: PLAYBOOK_TIMEOUT_MS });
        timings[`playbook_${pass}_ms`] = Date.now() - t0;
        let report: any;
        try {
          report = JSON.parse(r.stdout);
        } catch {
          assert.fail(`ansible-playbook gave no JSON (exit ${r.code}): ${r.stdout.slice(-3000)} ${r.stderr.slice(-3000)}`);
        }
        // objects.yml's tasks are named "<pass> …"; the other file's tasks are skipped in a run and left out here.
        const ran = tasksOf(report).filter((t) => (pass === 'changes' ? !t.name.startsWith('changes ') : t.name.startsWith(`${pass} `)));
        const failed = ran.flatMap((t) => t.results.filter((x) => x.failed).map((x) => `${t.name}: ${x.msg ?? JSON.stringify(x.res).slice(0, 600)}`));
        assert.deepEqual(failed, [], 'no task failed');
        assert.equal(r.code, 0, r.stderr.slice(-3000));
        assert.equal(report.stats.localhost.failures, 0);
        assert.equal(report.stats.localhost.unreachable, 0);
        tasks.push(...ran);
        return ran;
      };

      it('the playbook creates every object: each task of the first run changes something', { timeout: TEST_TIMEOUT_MS }, async () => {
        const create = await playbook('create');
        assert.ok(create.length >= 30, `${create.length} tasks`);
        for (const t of create) {
          assert.ok(t.name.startsWith('create '), t.name);
          assert.deepEqual(t.results.map((x) => x.changed), t.results.map(() => true), t.name);
        }
      });

      it('the same playbook again changes nothing (idempotent modules)', { timeout: TEST_TIMEOUT_MS, skip: storage !== 'sqlite' && 'checked on SQLite' }, async () => {
        assert.ok(tasks.length, 'the first run happened');
        const again = await playbook('again');
        assert.equal(again.length, tasks.filter((t) => t.name.startsWith('create ')).length);
        // The API creation is skipped: nb_lookup finds the devices.
        for (const t of again) {
          if (t.name === 'again devices through the API where the lookup finds none') assert.deepEqual(t.results.map((x) => x.skipped), [true]);
          else assert.deepEqual(t.results.map((x) => x.changed), t.results.map(() => false), t.name);
        }
      });

      it('updates, first-available allocations, nb_lookup lookups and removals', { timeout: TEST_TIMEOUT_MS }, async () => {
        assert.ok(tasks.length, 'the first run happened');
        await playbook('changes');
        for (const name of ['update site', 'update tenant', 'update device serial', 'update interface', 'update VLAN', 'update IP address', 'update virtual machine', 'update cable']) {
          assert.deepEqual(changed(name), [true], name);
        }
        assert.deepEqual(changed('update again (nothing changes)'), [false]);
        assert.equal(task('first available address in a prefix (state new)').results[0]!.res.ip_address.address, '10.10.1.3/24');
        assert.equal(task('first available /24 in the /16').results[0]!.res.prefix.prefix, '10.10.0.0/24');
        assert.deepEqual(task('lookups').results.map((x) => x.failed), [false]);
        for (const name of ['absent cable', 'absent allocated address', 'absent allocated prefix', 'absent LAG interface']) assert.deepEqual(changed(name), [true, false], name);
        assert.deepEqual(changed('absent tag'), [true, true, false]);
      });

      it('what the playbook left, read back through the API', async () => {
        assert.ok(tasks.length, 'the playbook ran');
        const one = async (p: string) => {
          const r = await api.get(p);
          assert.equal(r.status, 200, JSON.stringify(r.body));
          assert.equal(r.body.count, 1, `${p}: ${JSON.stringify(r.body.results?.map((o: any) => o.display))}`);
          return r.body.results[0];
        };
        const site = await one('/api/dcim/sites/?slug=site-one');
        assert.equal(site.status.value, 'planned');
        assert.equal(site.time_zone, 'Europe/Paris');
        assert.equal((await one('/api/dcim/device-types/?part_number=C9300-48P-A')).slug, 'c9300-48p');
        assert.equal((await one('/api/dcim/device-roles/?vm_role=true')).slug, 'access-switch');
        assert.equal(site.tenant.name, 'Tenant A');
        assert.deepEqual(site.tags.map((t: any) => t.slug), ['ansible']);
        const sw1 = await one('/api/dcim/devices/?name=sw1');
        assert.equal(sw1.serial, 'S1');
        assert.equal(sw1.rack.name, 'R1');
        assert.equal(sw1.position, 10);
        assert.equal(sw1.face.value, 'front');
        assert.equal(sw1.platform.slug, 'ios-xe');
        assert.equal(sw1.primary_ip4.address, '192.0.2.1/32');
        const sw2 = await one('/api/dcim/devices/?name=sw2');
        assert.equal(sw2.serial, 'S2-replaced');
        assert.equal(sw2.status.value, 'staged');
        const vc = await one('/api/dcim/virtual-chassis/?name=stack');
        assert.equal(vc.master.name, 'stack-m');
        assert.equal(vc.member_count, 2);
        const member = await one('/api/dcim/interfaces/?device=stack-c&name=Gi2/0/1');
        assert.equal(member.description, 'member port');
        // The chassis master's view of its members' interfaces (NetBox's virtual_chassis_member_id).
        const vcIfaces = await api.get(`/api/dcim/interfaces/?virtual_chassis_member_id=${vc.master.id}`);
        assert.deepEqual(vcIfaces.body.results.map((i: any) => `${i.device.name}:${i.name}`).sort(), ['stack-c:Gi2/0/1', 'stack-m:Gi1/0/1']);
        const gi2 = await one('/api/dcim/interfaces/?device=sw1&name=Gi1/0/2');
        assert.equal(gi2.mtu, 9000);
        assert.equal(gi2.lag, null, 'its LAG was removed');
        const gi1 = await one('/api/dcim/interfaces/?device=sw1&name=Gi1/0/1');
        assert.equal(gi1.mode.value, 'access');
        assert.equal(gi1.untagged_vlan.vid, 100);
        assert.equal(gi1.cable, null, 'the cable was removed');
        assert.equal((await api.get('/api/dcim/cables/')).body.count, 0);
        const ip = await one('/api/ipam/ip-addresses/?address=10.10.1.1/24');
        assert.equal(ip.assigned_object_type, 'dcim.interface');
        assert.equal(ip.assigned_object_id, gi1.id);
        assert.equal(ip.status.value, 'reserved');
        assert.equal(ip.dns_name, 'sw1.example.net');
        assert.equal(ip.vrf.rd, '65000:1');
        assert.equal((await one(`/api/ipam/ip-addresses/?assigned_object_type=dcim.interface&assigned_object_id=${gi1.id}`)).id, ip.id);
        const sw2ip = await one('/api/ipam/ip-addresses/?device=sw2');
        assert.equal(sw2ip.address, '10.10.1.2/24', 'the first free address of the prefix, on sw2');
        const ips = await api.get('/api/ipam/ip-addresses/?vrf_id=' + ip.vrf.id);
        assert.deepEqual(ips.body.results.map((i: any) => i.address).sort(), ['10.10.1.1/24', '10.10.1.2/24', '10.10.1.50/24']);
        assert.deepEqual((await api.get('/api/ipam/prefixes/?within=10.10.0.0/16')).body.results.map((p: any) => p.prefix), ['10.10.1.0/24']);
        const prefix = await one('/api/ipam/prefixes/?prefix=10.10.1.0/24');
        assert.equal(prefix.vlan.name, 'users');
        const vm = await one('/api/virtualization/virtual-machines/?name=vm1');
        assert.equal(vm.vcpus, 4);
        assert.equal(vm.memory, 4096);
        assert.equal(vm.cluster.name, 'kvm1');
        assert.equal(vm.role.slug, 'access-switch');
        assert.equal(vm.primary_ip4.address, '10.10.1.50/24');
        const vmIf = await one('/api/virtualization/interfaces/?virtual_machine=vm1');
        assert.equal(vmIf.untagged_vlan.vid, 100);
        assert.equal((await one(`/api/ipam/ip-addresses/?vminterface_id=${vmIf.id}`)).address, '10.10.1.50/24');
        assert.equal((await one('/api/virtualization/clusters/?name=kvm1')).type.slug, 'kvm');
        assert.equal((await api.get('/api/extras/tags/?name=unused')).body.count, 0);
      });

      const inventory = async (extra: string, label: string) => {
        const file = path.join(home, `${label}.netbox.yml`);
        fs.writeFileSync(
          file,
          [
            'plugin: netbox.netbox.nb_inventory',
            `api_endpoint: ${srv.url}`,
            `token: ${ADMIN_TOKEN}`,
            'validate_certs: false',
            'config_context: true',
            'interfaces: true',
            'services: true',
            'site_data: true',
            'racks: true',
            'virtual_chassis_name: true',
            'dns_name: true',
            'plurals: true',
            'group_by: [time_zone, utc_offset, sites, tenants, device_roles, platforms, device_types, manufacturers, tags, status, cluster, cluster_type, racks, location, is_virtual]',
            'device_query_filters:',
            '  - status: active',
            '  - tag: ansible',
            'vm_query_filters:',
            '  - cluster: kvm1',
            'compose:',
            '  ansible_network_os: platform.slug',
            '  serial_number: serial',
            'keyed_groups:',
            '  - key: tenant.slug',
            '    prefix: tenant',
            extra,
            '',
          ].join('\n'),
        );
        const t0 = Date.now();
        const r = await run(inventoryBin!, ['-i', file, '--list'], { cwd: home, env, timeoutMs: 120_000 });
        timings[`inventory_${label}_ms`] = Date.now() - t0;
        assert.equal(r.code, 0, r.stderr.slice(-3000));
        assert.doesNotMatch(r.stderr, /Failed to parse|Traceback|Unable to parse/, r.stderr.slice(-3000));
        return JSON.parse(r.stdout);
      };

      for (const [label, extra] of [
        ['chunked', 'fetch_all: false\nprefixes: false'],
        ['fetch_all', 'fetch_all: true\nprefixes: true'],
      ] as const) {
        it(`nb_inventory (${extra.replace('\n', ', ')}): hosts, groups and host variables`, async () => {
          assert.ok(tasks.length, 'the playbook ran');
          const inv = await inventory(extra, label);
          const hv = inv._meta.hostvars;
          // sw2 is staged (device_query_filters: status active); the chassis member stack-c is its master's host "stack".
          assert.deepEqual(Object.keys(hv).sort(), ['stack', 'sw1', 'vm1']);
          const hosts = (g: string) => (inv[g]?.hosts ?? []).sort();
          assert.deepEqual(hosts('sites_site-one'), ['stack', 'sw1', 'vm1']);
          assert.deepEqual(hosts('device_roles_access-switch'), ['stack', 'sw1', 'vm1']);
          assert.deepEqual(hosts('platforms_ios-xe'), ['stack', 'sw1', 'vm1']);
          assert.deepEqual(hosts('device_types_c9300-48p'), ['stack', 'sw1']);
          assert.deepEqual(hosts('manufacturers_cisco'), ['stack', 'sw1']);
          assert.deepEqual(hosts('tags_ansible'), ['stack', 'sw1', 'vm1']);
          assert.deepEqual(hosts('status_active'), ['stack', 'sw1', 'vm1']);
          assert.deepEqual(hosts('tenants_tenant-a'), ['stack', 'sw1']);
          assert.deepEqual(hosts('tenant_tenant_a'), ['stack', 'sw1'], 'keyed_groups');
          assert.deepEqual(hosts('racks_R1'), ['stack', 'sw1']);
          assert.deepEqual(hosts('cluster_kvm1'), ['vm1']);
          assert.deepEqual(hosts('cluster_type_kvm'), ['vm1']);
          assert.deepEqual(hosts('is_virtual'), ['vm1']);
          assert.ok(inv['sites_site-one'].children?.includes('location_floor-1'), JSON.stringify(inv['sites_site-one']));
          // The site's time zone, and its offset now (+1 or +2 with summer time).
          assert.deepEqual(hosts('time_zone_Europe_Paris'), ['stack', 'sw1', 'vm1']);
          const offset = Object.keys(inv).filter((g) => g.startsWith('utc_offset_'));
          assert.equal(offset.length, 1, offset.join());
          assert.match(offset[0]!, /^utc_offset_plus_[12]$/);
          assert.deepEqual(hosts(offset[0]!), ['stack', 'sw1', 'vm1']);
          const sw1 = hv.sw1;
          assert.equal(sw1.ansible_host, '192.0.2.1');
          assert.equal(sw1.ansible_network_os, 'ios-xe', 'compose');
          assert.equal(sw1.serial_number, 'S1', 'compose');
          assert.equal(sw1.primary_ip4, '192.0.2.1');
          // config_context: true — the site's context, as the plugin wraps it (a list of one object).
          assert.deepEqual(sw1.config_context, [{ ntp_servers: ['192.0.2.123'] }]);
          assert.deepEqual(hv.vm1.config_context, [{ ntp_servers: ['192.0.2.123'] }]);
          assert.ok(Array.isArray(sw1.services));
          assert.deepEqual(sw1.interfaces.map((i: any) => i.name).sort(), ['Gi1/0/1', 'Gi1/0/2', 'Loopback0']);
          const gi1 = sw1.interfaces.find((i: any) => i.name === 'Gi1/0/1');
          assert.deepEqual(gi1.ip_addresses.map((a: any) => a.address), ['10.10.1.1/24']);
          assert.equal(gi1.ip_addresses[0].dns_name, 'sw1.example.net');
          assert.equal(gi1.untagged_vlan.vid, 100);
          assert.equal(sw1.sites[0].slug, 'site-one', 'site_data');
          assert.deepEqual(hv.stack.interfaces.map((i: any) => i.name).sort(), ['Gi1/0/1', 'Gi2/0/1']);
          const vm1 = hv.vm1;
          assert.equal(vm1.ansible_host, '10.10.1.50');
          assert.equal(vm1.vcpus, 4);
          assert.equal(vm1.memory, 4096);
          assert.equal(vm1.cluster, 'kvm1');
          assert.deepEqual(vm1.interfaces.map((i: any) => [i.name, i.ip_addresses.map((a: any) => a.address)]), [['eth0', ['10.10.1.50/24']]]);
          if (label === 'fetch_all') {
            const site = sw1.sites[0];
            assert.ok(Array.isArray(site.prefixes), JSON.stringify(site).slice(0, 500));
            assert.deepEqual(site.prefixes.map((p: any) => p.prefix), ['10.10.0.0/16']);
          }
        });
      }

      it('the fields the modules write: time_zone as NetBox validates it, part_number, vm_role limiting VM roles', async () => {
        const site = (await api.get('/api/dcim/sites/?slug=site-one')).body.results[0];
        for (const tz of ['Mars/Olympus', 'europe/paris', '', 'Europe/Paris/x', 42]) {
          const r = await api.patch(`/api/dcim/sites/${site.id}/`, { time_zone: tz });
          assert.equal(r.status, 400, `${JSON.stringify(tz)}: ${JSON.stringify(r.body)}`);
          assert.deepEqual(r.body, { time_zone: ['A valid timezone is required.'] });
        }
        assert.equal((await api.get('/api/dcim/sites/?time_zone=Europe/Paris')).body.count, 1);
        const router = await api.post('/api/dcim/device-roles/', { name: 'Router', slug: 'router', vm_role: false });
        assert.equal(router.status, 201, JSON.stringify(router.body));
        assert.equal(router.body.vm_role, false);
        const vm = (await api.get('/api/virtualization/virtual-machines/?name=vm1')).body.results[0];
        const refused = await api.patch(`/api/virtualization/virtual-machines/${vm.id}/`, { role: router.body.id });
        assert.equal(refused.status, 400);
        assert.deepEqual(refused.body, { role: [`device role instance with id ${router.body.id} is not a valid choice.`] });
        // Devices may take it; once vm_role is set, so may VMs.
        assert.equal((await api.patch(`/api/dcim/device-roles/${router.body.id}/`, { vm_role: true })).status, 200);
        assert.equal((await api.patch(`/api/virtualization/virtual-machines/${vm.id}/`, { role: router.body.id })).status, 200);
        assert.equal((await api.patch(`/api/virtualization/virtual-machines/${vm.id}/`, { role: vm.role.id })).status, 200);
        assert.equal((await api.get('/api/dcim/device-roles/?vm_role=false')).body.count, 0);
      });

      it('the requests the collection made: /api/status without the slash, /api/schema/, no 5xx', () => {
        assert.ok(tasks.length, 'the playbook ran');
        const status = seen.filter((s) => s.url === '/api/status');
        assert.ok(status.length >= 2, 'nb_inventory asks for /api/status without the trailing slash');
        assert.ok(status.every((s) => s.status === 301));
        assert.ok(seen.some((s) => s.url.startsWith('/api/schema/') && s.status === 200), 'nb_inventory reads /api/schema/');
        assert.ok(seen.some((s) => s.url.includes('virtual_chassis_member_id=') && s.status === 200));
        assert.ok(seen.some((s) => /[?&]assigned_object_id=/.test(s.url) && s.status === 200));
        assert.ok(seen.some((s) => s.url.startsWith('/api/virtualization/virtual-machines/') && s.status === 200));
        assert.deepEqual(seen.filter((s) => s.status >= 500), []);
        // Only what a real NetBox answers with 4xx too: lookups of objects that do not exist yet are 200 with no results.
        assert.deepEqual(seen.filter((s) => s.status >= 400), []);
      });
    });
  });
}
