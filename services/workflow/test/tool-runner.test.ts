/**
 * The thread's shell that starts one-shot tools (files/tool-runner.ts):
 * arguments reach the tool exactly as given (quotes, spaces, `$`, globs,
 * new lines), exit statuses and signals come back, a missing binary is a
 * failed run, runs queue one at a time, a shell that dies is replaced, and
 * killing the listed group (what stopping an execution thread does) ends
 * the shell and the tool it runs. No server.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { toolEnvironment } from '../src/files/tool-env.ts';
import { commandLine, ShellRunner, shellQuote } from '../src/files/tool-runner.ts';
import { killChildren, newChildList, shareChildList } from '../src/processes/child-processes.ts';

const posix = process.platform !== 'win32';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-tool-runner-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A script that writes each of its arguments on a line of `out`, then runs `tail`. */
function tool(name: string, tail = 'exit 0'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > '${path.join(dir, `${name}.args`)}'\n${tail}\n`, { mode: 0o755 });
  return file;
}
const argsOf = (name: string) => fs.readFileSync(path.join(dir, `${name}.args`), 'utf8').split('\n').slice(0, -1);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, cond: () => boolean): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > 10_000) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('tool runner', { skip: !posix && 'POSIX shells only' }, () => {
  test('shell words: every character stays itself', () => {
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
    assert.match(commandLine('/bin/x', ['a b'], { cwd: '/t', stdoutFile: '/o' }), /^\( cd '\/t' && exec '\/bin\/x' 'a b' \) <\/dev\/null >'\/o' 2>\/dev\/null & echo "p \$!"; wait "\$!"; echo "x \$\?"\n$/);
  });

  test('arguments arrive exactly, stdout goes to the file, the folder is the one asked for; the shell stays in its own', async () => {
    const runner = new ShellRunner();
    try {
      const weird = ["it's", 'two words', '$HOME', '*', '`id`', '$(id)', 'a\nb', '', '-', '--', ';', '|', '&&', '\\', '"q"', 'é ü ✓'];
      assert.equal(await runner.run(tool('echoer'), weird), 0);
      assert.deepEqual(argsOf('echoer').join('\n'), weird.join('\n'));
      const out = path.join(dir, 'out');
      const sub = fs.mkdtempSync(path.join(dir, "sub 'x' "));
      const pwd = tool('pwd', 'pwd; echo to-stdout');
      assert.equal(await runner.run(pwd, [], { cwd: sub, stdoutFile: out }), 0);
      assert.equal(fs.readFileSync(out, 'utf8'), `${fs.realpathSync(sub)}\nto-stdout\n`);
      // The cd was the tool's only: a run without cwd is back in the process's folder.
      assert.equal(await runner.run(pwd, [], { stdoutFile: out }), 0);
      assert.equal(fs.readFileSync(out, 'utf8'), `${process.cwd()}\nto-stdout\n`);
    } finally {
      runner.close();
    }
  });

  test("tools start with glibc's huge pages asked for; an operator's GLIBC_TUNABLES is kept", async () => {
    assert.equal(toolEnvironment({ PATH: '/bin' }).GLIBC_TUNABLES, 'glibc.malloc.hugetlb=1');
    assert.equal(toolEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=1' }).GLIBC_TUNABLES, 'glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1');
    assert.equal(toolEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }).GLIBC_TUNABLES, 'glibc.malloc.hugetlb=0');
    assert.equal(toolEnvironment({ GLIBC_TUNABLES: 'a=1:glibc.malloc.hugetlb=2' }).GLIBC_TUNABLES, 'a=1:glibc.malloc.hugetlb=2');
    assert.equal(toolEnvironment({ PATH: '/x' }).PATH, '/x', 'the rest of the environment is passed on');
    const runner = new ShellRunner();
    try {
      const out = path.join(dir, 'env.out');
      assert.equal(await runner.run(tool('env', 'printf %s "$GLIBC_TUNABLES"'), [], { stdoutFile: out }), 0);
      assert.match(fs.readFileSync(out, 'utf8'), /(^|:)glibc\.malloc\.hugetlb=/);
    } finally {
      runner.close();
    }
  });

  test('exit statuses, signals, a missing binary; runs queue one at a time', async () => {
    const runner = new ShellRunner();
    try {
      assert.equal(await runner.run(tool('three', 'exit 3'), []), 3);
      assert.equal(await runner.run(tool('killed', 'kill -9 $$'), []), 137);
      assert.equal(await runner.run(path.join(dir, 'no-such-tool'), ['x']), 127);
      // Concurrent calls: each gets its own status, in order.
      const order = path.join(dir, 'order');
      const slow = tool('slow', `sleep 0.2; echo slow >> '${order}'; exit 5`);
      const fast = tool('fast', `echo fast >> '${order}'; exit 6`);
      assert.deepEqual(await Promise.all([runner.run(slow, []), runner.run(fast, []), runner.run(tool('zero'), [])]), [5, 6, 0]);
      assert.deepEqual(fs.readFileSync(order, 'utf8').split('\n'), ['slow', 'fast', '']);
    } finally {
      runner.close();
    }
  });

  test('a shell that dies (with its tool) fails that run; the next run starts another', async () => {
    const runner = new ShellRunner();
    try {
      const pidFile = path.join(dir, 'parent');
      // The tool kills its parent shell, then itself.
      const killer = tool('killer', `echo $PPID > '${pidFile}'; kill -9 $PPID; kill -9 $$`);
      assert.equal(await runner.run(killer, []), -1);
      assert.equal(await runner.run(tool('after'), []), 0);
    } finally {
      runner.close();
    }
  });

  test('a shell that cannot be started: every run answers unstartable', async () => {
    const runner = new ShellRunner(path.join(dir, 'no-such-shell'));
    for (let i = 0; i < 4; i++) assert.equal(await runner.run(tool('never'), []), 'unstartable');
  });

  test('killing the listed group (a stopped execution thread) ends the shell and the tool it runs', async () => {
    const list = newChildList();
    shareChildList(list.buffer as SharedArrayBuffer);
    const runner = new ShellRunner();
    const pidFile = path.join(dir, 'sleeper.pid');
    const running = runner.run(tool('sleeper', `echo $$ > '${pidFile}'; exec sleep 30`), []);
    await until('the tool to start', () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '');
    const toolPid = Number(fs.readFileSync(pidFile, 'utf8'));
    const listed = [...list].filter((p) => p !== 0);
    assert.equal(listed.length, 1);
    assert.ok(listed[0]! < 0, 'listed as a process group');
    killChildren(list);
    assert.equal(await running, -1, 'the run fails');
    await until('the tool to be gone', () => !alive(toolPid));
    assert.ok(!alive(-listed[0]!) || fs.readFileSync(`/proc/${-listed[0]!}/stat`, 'utf8').includes(') Z'), 'the shell is gone (or a zombie)');
  });
});
