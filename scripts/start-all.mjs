/**
 * `npm start`: every service on its embedded defaults (SQLite under ./data,
 * in-process queue), each as its own process so one crash does not take the
 * others down, supervised by this process.
 *
 *   node scripts/start-all.mjs [--host H] [--data-dir D] [--memory-port N] [--workflow-port N]
 *        [--inventory-port N] [--only memory,inventory] [--log-requests] [--stop-timeout-ms 10000]
 *        [--<service>-<flag> value …]   (e.g. --inventory-admin-token x → inventory's --admin-token x)
 *
 * Stopping: SIGTERM, SIGINT or SIGHUP to this process (or to the npm process
 * that runs it: the npm script execs into it) stops every service gracefully
 * and exits 0, or kills what is left after --stop-timeout-ms and exits 1.
 * When npm itself is killed (SIGKILL), scripts/tie-to-parent.sh has the
 * kernel send this process SIGTERM: the same graceful stop.
 * Children run in process groups of their own (a terminal's Ctrl-C reaches
 * only this process, which stops them once) and hold an IPC channel to it:
 * when this process dies, even by SIGKILL, the channel closes and each child
 * shuts itself down (scripts/run-service.mjs).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundleIsStale, bundleService, parentDiedEarly, stopBundler, THREAD_ENTRIES } from './run-service.mjs';
import { logFormatter } from './log-format.mjs';

const root = path.resolve(import.meta.dirname, '..');

export const SERVICES = [
  { name: 'memory', port: 8000, ui: null },
  { name: 'workflow', port: 8188, ui: '/' },
  { name: 'inventory', port: 8080, ui: '/ui/' },
];

function parse(argv) {
  const options = {
    host: { type: 'string' },
    'data-dir': { type: 'string' },
    'log-level': { type: 'string' },
    'log-requests': { type: 'boolean' },
    'stop-timeout-ms': { type: 'string' },
    only: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  };
  for (const s of SERVICES) options[`${s.name}-port`] = { type: 'string' };
  const { values, tokens } = parseArgs({ args: argv, options, strict: false, tokens: true });
  // --<service>-<flag> [value] that is not one of ours goes to that service as --<flag> [value].
  const extra = Object.fromEntries(SERVICES.map((s) => [s.name, []]));
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.kind !== 'option' || options[t.name]) continue;
    const s = SERVICES.find((x) => t.name.startsWith(`${x.name}-`));
    if (!s) throw new Error(`unknown flag --${t.name} (flags for one service are --<service>-<flag>, e.g. --inventory-admin-token)`);
    const flag = `--${t.name.slice(s.name.length + 1)}`;
    if (t.value !== undefined) extra[s.name].push(flag, t.value);
    else if (tokens[i + 1]?.kind === 'positional') extra[s.name].push(flag, tokens[++i].value);
    else extra[s.name].push(flag);
  }
  return { values, extra };
}

const USAGE = `usage: npm start -- [--host 127.0.0.1] [--data-dir ./data] [--memory-port 8000] [--workflow-port 8188]
                    [--inventory-port 8080] [--only memory,workflow,inventory] [--log-requests]
                    [--stop-timeout-ms 10000] [--<service>-<flag> value …]
`;

/** Resolves when host:port can be bound (then releases it), with the error code otherwise. */
function portFree(host, port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', (err) => resolve(err.code ?? 'error'));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(null)));
  });
}

function portTakenMessage(s, host, port) {
  return `${s.name}: port ${port} on ${host} is already in use. Stop whatever listens there, or start on another port: npm start -- --${s.name}-port <port>`;
}

const BOX_WIDTH = 78;
function framed(lines) {
  const wrap = (line) => {
    const out = [];
    let rest = line;
    while (rest.length > BOX_WIDTH - 4) {
      let cut = rest.lastIndexOf(' ', BOX_WIDTH - 4);
      if (cut <= 0) cut = BOX_WIDTH - 4;
      out.push(rest.slice(0, cut));
      rest = rest.slice(cut).trimStart();
    }
    out.push(rest);
    return out;
  };
  const body = lines.flatMap(wrap).map((l) => `│ ${l.padEnd(BOX_WIDTH - 4)} │`);
  return [`┌${'─'.repeat(BOX_WIDTH - 2)}┐`, ...body, `└${'─'.repeat(BOX_WIDTH - 2)}┘`].join('\n');
}

/** The block that shows the inventory's first-start admin token, once. */
export function adminTokenBlock(token, url) {
  return framed([
    'inventory: first start, superuser "admin" created. Its API token:',
    '',
    `    ${token}`,
    '',
    'Shown only now (only its hash is stored): keep it.',
    `Admin UI: log in with it at ${url}/ui/`,
    'API: header "Authorization: Token <token>"; in the docs, Authorize.',
    `Another token: POST ${url}/api/users/tokens/ with this one, or restart with --inventory-admin-token <token> (added to user "admin").`,
  ]);
}

function banner(s, info) {
  const lines = [`${s.name.padEnd(10)} ${info.url}`, `${''.padEnd(10)} docs ${info.url}/docs   storage ${info.storage}`];
  if (s.ui) lines.push(`${''.padEnd(10)} ${s.name === 'inventory' ? 'admin UI' : 'UI'} ${info.url}${s.ui}`);
  return lines.join('\n');
}

async function main() {
  if (parentDiedEarly()) {
    process.stderr.write('npm start: the process that started this one (npm) has already exited; not starting\n');
    return 1;
  }
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err.message}\n${USAGE}`);
    return 2;
  }
  const { values, extra } = args;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const host = values.host ?? process.env.HOST ?? '127.0.0.1';
  const dataDir = path.resolve(values['data-dir'] ?? path.join(root, 'data'));
  const stopTimeoutMs = Number(values['stop-timeout-ms'] ?? process.env.STOP_TIMEOUT_MS ?? 10_000);
  const only = values.only?.split(',').map((x) => x.trim());
  const services = SERVICES.filter((s) => !only || only.includes(s.name)).filter((s) => fs.existsSync(path.join(root, 'services', s.name, 'src', 'main.ts')));
  const unknown = only?.filter((n) => !SERVICES.some((s) => s.name === n)) ?? [];
  if (unknown.length > 0 || services.length === 0) {
    process.stderr.write(`unknown service in --only: ${unknown.join(', ') || values.only}\n`);
    return 2;
  }
  const ports = {};
  for (const s of services) {
    const p = Number(values[`${s.name}-port`] ?? s.port);
    if (!Number.isInteger(p) || p < 1 || p > 65535) {
      process.stderr.write(`invalid --${s.name}-port: ${values[`${s.name}-port`]}\n`);
      return 2;
    }
    ports[s.name] = p;
  }
  for (const s of services) {
    const err = await portFree(host, ports[s.name]);
    if (err === 'EADDRINUSE') {
      process.stderr.write(`${portTakenMessage(s, host, ports[s.name])}\n`);
      return 1;
    }
    if (err) {
      process.stderr.write(`${s.name}: cannot listen on ${host}:${ports[s.name]} (${err})\n`);
      return 1;
    }
  }

  // Bundles are normally built by npm install; after a source change they are rebuilt here, before any service starts.
  try {
    const t0 = Date.now();
    const stale = services.flatMap((s) => [s.name, ...(THREAD_ENTRIES[s.name] ?? [])]).filter((name) => bundleIsStale(name));
    if (stale.length > 0) {
      process.stdout.write(`building ${stale.join(', ')} (sources changed since the last build)…\n`);
      await Promise.all(stale.map((name) => bundleService(name)));
      process.stdout.write(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    }
  } finally {
    await stopBundler();
  }

  const pretty = process.stdout.isTTY === true;
  const env = { ...process.env, SVC_SUPERVISED: '1' };
  // Request logs are off under npm start unless asked for (a LOG_REQUESTS in the environment is kept).
  if (values['log-requests']) env.LOG_REQUESTS = '1';
  else if (!env.LOG_REQUESTS) env.LOG_REQUESTS = '0';

  const state = new Map();
  let stopping = false;
  let started = false;
  let exitCode = 0;
  const done = [];

  const spawnService = (s) => {
    const st = state.get(s.name) ?? { restarts: 0, backoffMs: 1000, info: null, timer: null };
    state.set(s.name, st);
    const args = [path.join(root, 'scripts', 'run-service.mjs'), s.name, '--port', String(ports[s.name]), '--host', host, '--data-dir', path.join(dataDir, s.name)];
    if (values['log-level']) args.push('--log-level', values['log-level']);
    args.push(...extra[s.name]);
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true });
    st.child = child;
    st.listening = null;
    st.startedAt = Date.now();
    let output = '';
    const format = logFormatter(s.name, { pretty });
    const pipe = (stream, target) => {
      let buf = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        buf += chunk;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (!st.info && output.length < 20_000) output += `${line}\n`;
          const shown = format(line);
          if (shown !== null) target.write(`${shown}\n`);
        }
      });
    };
    pipe(child.stdout, process.stdout);
    pipe(child.stderr, process.stderr);
    child.on('message', (m) => {
      if (m?.type === 'listening') {
        st.listening = { url: m.url, storage: m.storage };
      } else if (m?.type === 'ready' && st.listening) {
        // run-service.mjs says so once the service's main module has finished (after its admin token, if any).
        st.info = st.listening;
        if (started) process.stdout.write(`${s.name} is back at ${st.info.url}\n`);
        else if (services.every((x) => state.get(x.name)?.info)) {
          started = true;
          const lines = services.map((x) => banner(x, state.get(x.name).info));
          process.stdout.write(`\n${lines.join('\n\n')}\n\n`);
          for (const x of services) if (state.get(x.name).token) process.stdout.write(`${adminTokenBlock(state.get(x.name).token, state.get(x.name).info.url)}\n\n`);
          process.stdout.write(`${requestLogsNote(values['log-requests'] || env.LOG_REQUESTS !== '0')}\n`);
        }
      } else if (m?.type === 'admin-token') {
        st.token = m.token;
        if (started) process.stdout.write(`${adminTokenBlock(m.token, st.info?.url ?? `http://${host}:${ports[s.name]}`)}\n`);
      }
    });
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    done.push(exited);
    exited.then(({ code, signal }) => {
      st.child = null;
      if (stopping) return;
      const how = signal ? `killed by ${signal}` : `exit code ${code}`;
      if (!st.info) {
        // It never served: retrying would fail the same way. Stop everything and say why.
        const taken = /EADDRINUSE/.test(output);
        process.stderr.write(`\n${taken ? portTakenMessage(s, host, ports[s.name]) : `${s.name} could not start (${how})`}\n`);
        exitCode = 1;
        stop('start-up failure');
        return;
      }
      // A service that ran a while before it stopped starts again after 1 s; one that keeps failing waits longer each time.
      if (Date.now() - st.startedAt > 60_000) st.backoffMs = 1000;
      const wait = st.backoffMs;
      st.backoffMs = Math.min(st.backoffMs * 2, 30_000);
      st.restarts++;
      st.info = null;
      process.stderr.write(`${s.name} stopped unexpectedly (${how}); restarting in ${wait / 1000} s (restart ${st.restarts})\n`);
      st.timer = setTimeout(() => {
        st.timer = null;
        if (!stopping) spawnService(s);
      }, wait);
    });
  };

  async function stop(reason) {
    if (stopping) {
      process.stderr.write(`already stopping (${reason}); services still running are killed after ${stopTimeoutMs / 1000} s\n`);
      return;
    }
    stopping = true;
    if (reason !== 'start-up failure') process.stderr.write(`${reason}: stopping ${services.map((s) => s.name).join(', ')}\n`);
    for (const st of state.values()) {
      if (st.timer) clearTimeout(st.timer);
      if (st.child && st.child.exitCode === null && st.child.signalCode === null) st.child.kill('SIGTERM');
    }
    let timer;
    const timedOut = new Promise((resolve) => {
      timer = setTimeout(() => resolve(true), stopTimeoutMs);
    });
    const allDone = (async () => {
      // A restart may have spawned meanwhile: wait until no child is left.
      for (;;) {
        const alive = [...state.values()].filter((st) => st.child);
        if (alive.length === 0) return false;
        await Promise.all(alive.map((st) => new Promise((r) => (st.child ? st.child.once('exit', r) : r()))));
      }
    })();
    if (await Promise.race([allDone, timedOut])) {
      for (const [name, st] of state) {
        if (!st.child) continue;
        process.stderr.write(`${name} did not stop within ${stopTimeoutMs / 1000} s: killed\n`);
        try {
          process.kill(-st.child.pid, 'SIGKILL');
        } catch {
          st.child.kill('SIGKILL');
        }
      }
      exitCode = 1;
      await allDone;
    }
    clearTimeout(timer);
    process.exit(exitCode);
  }

  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => stop(`received ${sig}`));
  process.stdout.write(`starting ${services.map((s) => s.name).join(', ')} (data in ${dataDir}; stop with Ctrl-C or SIGTERM)\n`);
  for (const s of services) spawnService(s);
  return undefined;
}

function requestLogsNote(on) {
  return on ? 'Request logs: on.' : 'Request logs: off (npm start -- --log-requests to see them). Ctrl-C stops all services.';
}

const code = await main();
if (code !== undefined) process.exit(code);
