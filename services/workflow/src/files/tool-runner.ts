/**
 * One-shot tools (cwebp, img2webp) started by a small shell that lives as
 * long as the execution thread, instead of by this process.
 *
 * Starting a child from Node forks the whole service: its page tables are
 * copied (~300 MB mapped after a few image prompts) and every page it writes
 * afterwards faults once, because the fork marked them copy-on-write. Measured
 * on the 2-core VM, per cwebp run: 5 ms of the parent's CPU at 48 MB RSS,
 * 12.6 ms at 300 MB, and the execution thread of a running service took
 * ~950 page faults a prompt that ran cwebp (~10 without). A shell that is
 * started once (that one fork) forks a process of a few hundred KB instead.
 *
 * Protocol: one command line a run, written to the shell's stdin; the tool
 * runs in the background with its input, output and errors redirected to
 * files (or /dev/null), and the shell answers `p <pid>` and, once the tool
 * has ended, `x <status>` (128 + the signal's number for a killed tool).
 * Every argument goes single-quoted, so no character of a path or option
 * reaches the shell as syntax. Runs go one at a time.
 *
 * The shell leads a process group of its own: when an execution thread is
 * stopped, the main thread kills the group (processes/child-processes.ts), so a
 * tool still running goes with it. A shell that dies is started again on the
 * next run; after three that could not be started, runs answer
 * 'unstartable' and callers start their tool themselves.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { trackGroup } from '../processes/child-processes.ts';
import { toolEnvironment } from './tool-env.ts';

export interface ToolRun {
  /** Absolute path of the file that gets the tool's stdout (else /dev/null). */
  stdoutFile?: string;
  /** The folder the tool runs in (else the process's). */
  cwd?: string;
}

export interface ToolRunner {
  /** The tool's exit status (127 when it could not be executed, 128 + n when signal n ended it), or 'unstartable' when no shell runs here. */
  run(binary: string, args: readonly string[], options?: ToolRun): Promise<number | 'unstartable'>;
}

/** A POSIX shell word that is exactly `s`. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The line that runs one tool in the shell and reports its pid and status. */
export function commandLine(binary: string, args: readonly string[], options: ToolRun = {}): string {
  const words = [binary, ...args].map(shellQuote).join(' ');
  // A subshell for the cd, ending in exec: the background job is the tool itself, and the shell's own folder stays.
  const job = options.cwd === undefined ? `exec ${words}` : `cd ${shellQuote(options.cwd)} && exec ${words}`;
  const out = options.stdoutFile === undefined ? '/dev/null' : shellQuote(options.stdoutFile);
  return `( ${job} ) </dev/null >${out} 2>/dev/null & echo "p $!"; wait "$!"; echo "x $?"\n`;
}

const MAX_START_FAILURES = 3;

export class ShellRunner implements ToolRunner {
  private sh: ChildProcessByStdio<Writable, Readable, null> | null = null;
  private untrack: () => void = () => {};
  private pending = '';
  private lines: string[] = [];
  private waiter: ((line: string | null) => void) | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  private startFailures = 0;

  constructor(private readonly shell = '/bin/sh') {}

  run(binary: string, args: readonly string[], options: ToolRun = {}): Promise<number | 'unstartable'> {
    const next = this.chain.then(() => this.runNow(binary, args, options));
    this.chain = next.catch(() => {});
    return next;
  }

  /** Ends the shell (it also ends by itself when its stdin closes with the thread). */
  close(): void {
    this.sh?.stdin.end();
    this.dead();
  }

  private async runNow(binary: string, args: readonly string[], options: ToolRun): Promise<number | 'unstartable'> {
    const sh = this.start();
    if (!sh) return 'unstartable';
    // Held only while a run is under way: an idle shell keeps no thread alive.
    sh.ref();
    (sh.stdout as Readable & { ref?(): void }).ref?.();
    try {
      sh.stdin.write(commandLine(binary, args, options));
      // `p <pid>` first (the pid is not needed: the group is what gets killed), then the status.
      if ((await this.nextLine()) === null) return -1;
      return await this.status();
    } finally {
      if (this.sh === sh) {
        sh.unref();
        (sh.stdout as Readable & { unref?(): void }).unref?.();
      }
    }
  }

  /** The `x <status>` line of the run under way; -1 when the shell died first. */
  private async status(): Promise<number> {
    for (;;) {
      const line = await this.nextLine();
      if (line === null) return -1;
      const m = /^x (\d+)$/.exec(line);
      if (m) return Number(m[1]);
    }
  }

  private nextLine(): Promise<string | null> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (!this.sh) return Promise.resolve(null);
    return new Promise((resolve) => (this.waiter = resolve));
  }

  private start(): ChildProcessByStdio<Writable, Readable, null> | null {
    if (this.sh) return this.sh;
    if (this.startFailures >= MAX_START_FAILURES) return null;
    let sh: ChildProcessByStdio<Writable, Readable, null>;
    try {
      // detached: a process group of its own, which the main thread can kill with the tool in it.
      sh = spawn(this.shell, [], { stdio: ['pipe', 'pipe', 'ignore'], detached: true, windowsHide: true, env: toolEnvironment() });
    } catch {
      this.startFailures++;
      return null;
    }
    if (sh.pid === undefined) {
      this.startFailures++;
      sh.on('error', () => {});
      return null;
    }
    this.sh = sh;
    this.lines = [];
    this.pending = '';
    this.untrack = trackGroup(sh.pid);
    sh.stdin.on('error', () => this.dead(sh));
    sh.on('error', () => this.dead(sh));
    sh.on('exit', () => this.dead(sh));
    sh.stdout.setEncoding('latin1');
    sh.stdout.on('data', (chunk: string) => {
      if (this.sh !== sh) return;
      const parts = (this.pending + chunk).split('\n');
      this.pending = parts.pop()!;
      for (const line of parts) {
        const w = this.waiter;
        if (w) {
          this.waiter = null;
          w(line);
        } else this.lines.push(line);
      }
    });
    sh.unref();
    (sh.stdout as Readable & { unref?(): void }).unref?.();
    return sh;
  }

  private dead(which = this.sh): void {
    if (!which || this.sh !== which) return;
    this.sh = null;
    this.untrack();
    this.untrack = () => {};
    const w = this.waiter;
    this.waiter = null;
    w?.(null);
  }
}

let threadRunner: ShellRunner | undefined;

/** This thread's runner (POSIX systems; elsewhere every run answers 'unstartable'). */
export function toolRunner(): ToolRunner {
  if (process.platform === 'win32') return { run: async () => 'unstartable' };
  return (threadRunner ??= new ShellRunner());
}
