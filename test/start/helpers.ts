import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
export { freePort } from '@svc/testkit';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

/**
 * Whether no socket listens on the TCP port (/proc/net/tcp{,6}, state 0A). A
 * trial bind would also fail on a client connection of another program that
 * happens to use the port as its local one.
 */
export function portFree(port: number): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(hex) && cols[3] === '0A') return false;
    }
  }
  return true;
}

/** Pids of live processes whose command line contains `needle` (e.g. a test's data directory). */
function allThreadsGone(pid: string): boolean {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).every((t) => {
      try {
        return /^\d+ \(.*\) [ZX] /.test(fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8'));
      } catch {
        return true;
      }
    });
  } catch {
    return true;
  }
}

export function processesWith(needle: string): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      // A zombie has exited: it holds no port, only a line in its parent's table. But a leader shows Z as soon
      // as its own thread ends, while the process's other threads (and its sockets) are still being torn down:
      // gone only when every thread is.
      if (cmd.includes(needle) && !(/^\d+ \(.*\) Z /.test(stat) && allThreadsGone(d))) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Polls `check` until it returns a truthy value, or fails after `ms` with `what`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, ms = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Started {
  /** The npm process, as a supervisor (systemd, Docker, PM2) would hold it. */
  proc: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the output once `pattern` appears in it. */
  waitForOutput(pattern: RegExp, ms?: number): Promise<string>;
}

/** `npm start -- <args>` with its output collected (not a terminal: service logs stay JSON). */
export function npmStart(args: string[], env: NodeJS.ProcessEnv = {}): Started {
  const proc = spawn('npm', ['start', '--silent', '--', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_REQUESTS: '', DATABASE_URL: '', ...env },
  });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (c: Buffer) => {
    out += String(c);
    for (const l of listeners) l();
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    proc,
    output: () => out,
    exited,
    waitForOutput(pattern, ms = 120_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(out)) {
            cleanup();
            resolve(out);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern} in:\n${out}`));
        }, ms);
        const gone = () => {
          cleanup();
          reject(new Error(`npm start exited before ${pattern} appeared:\n${out}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          proc.off('exit', gone);
        };
        listeners.add(check);
        proc.once('exit', gone);
        check();
      });
    },
  };
}

/** The pid of the supervisor (scripts/start-all.mjs) that npm execs into: npm's child. */
export function supervisorPid(npmPid: number): number {
  const children = fs.readFileSync(`/proc/${npmPid}/task/${npmPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  const pid = children.find((c) => {
    try {
      return fs.readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('start-all.mjs');
    } catch {
      return false;
    }
  });
  if (!pid) throw new Error(`no start-all.mjs child of npm (${npmPid}): ${children.join(', ')}`);
  return pid;
}

/** Pid of the process running one service for a test's data directory. */
export function servicePid(dataDir: string, service: string): number | undefined {
  return processesWith(path.join(dataDir, service)).find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`run-service.mjs\0${service}\0`));
}
