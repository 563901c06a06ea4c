import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '@svc/testkit';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

describe('manage webhook_receiver', () => {
  let child: ChildProcess;
  let out = '';
  let port = 0;

  const start = async (args: string[]) => {
    port = await freePort();
    out = '';
    child = spawn(process.execPath, ['--import', 'tsx', 'src/commands/manage.ts', 'webhook_receiver', '--port', String(port), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const end = Date.now() + 60_000;
    while (!out.includes('Listening on port')) {
      if (Date.now() > end) throw new Error('receiver did not start: ' + out);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  };
  const waitOut = async (needle: string) => {
    // a failure detector only: a loaded machine gets a minute
    const end = Date.now() + 60_000;
    while (!out.includes(needle)) {
      if (Date.now() > end) throw new Error(`missing ${needle} in ${out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  before(() => start([]));
  after(stop);

  it('answers 200 and prints request line, headers and pretty JSON as the reference', async () => {
    assert.equal(out, `Listening on port http://localhost:${port}. Stop with CONTROL-C.\n`);
    const body = '{"foo": "bar", "n": [1, 2], "u": "\u00e9"}';
    const res = await fetch(`http://127.0.0.1:${port}/hook?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-foo': 'Bar' }, body });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'Webhook received!\n');
    await waitOut('------------\n');
    const lines = out.split('\n').slice(1);
    assert.match(lines[0]!, new RegExp(`^\\[1\\] \\w{3}, \\d{2} \\w{3} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT 127\\.0\\.0\\.1 "POST /hook\\?x=1 HTTP/1\\.1" 200 -$`));
    assert.ok(lines.includes(`host: 127.0.0.1:${port}`) || lines.includes(`Host: 127.0.0.1:${port}`));
    assert.ok(lines.includes('x-foo: Bar'));
    assert.ok(lines.includes(`content-length: ${Buffer.byteLength(body)}`));
    const tail = out.slice(out.indexOf('\n\n') + 2);
    assert.equal(tail, '{\n    "foo": "bar",\n    "n": [\n        1,\n        2\n    ],\n    "u": "\\u00e9"\n}\nCompleted request #1\n------------\n');
  });

  it('prints (No body) without Content-Length and skips non-JSON bodies', async () => {
    out = '';
    await fetch(`http://127.0.0.1:${port}/get`);
    await waitOut('------------\n');
    assert.match(out, /^\[2\] .* "GET \/get HTTP\/1\.1" 200 -\n(.+\n)+\n\(No body\)\nCompleted request #2\n------------\n$/);
    out = '';
    await fetch(`http://127.0.0.1:${port}/form`, { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"a": 1}' });
    await waitOut('------------\n');
    assert.match(out, /\n\nCompleted request #3\n------------\n$/);
    assert.ok(!out.includes('"a"'));
  });

  it('--no-headers prints only the request line and body', async () => {
    await stop();
    await start(['--no-headers']);
    await fetch(`http://127.0.0.1:${port}/x`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '[]' });
    await waitOut('------------\n');
    assert.match(out, /\n\[1\] .* "PUT \/x HTTP\/1\.1" 200 -\n\[\]\nCompleted request #1\n------------\n$/);
  });
});
