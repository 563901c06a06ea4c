import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Honcho } from '@honcho-ai/sdk';
import { forEachStorage } from '@svc/testkit';
import { uniq, useServer } from '../helpers.ts';

const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');

/** A one-page PDF whose page shows `text` (Helvetica), with a correct xref table. */
export function tinyPdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 72 720 Td (${text.replace(/[()\\]/g, '\\$&')}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n` + offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

function form(parts: Record<string, string | { name: string; type: string; bytes: Buffer }>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(parts)) {
    if (typeof v === 'string') f.append(k, v);
    else f.append(k, new Blob([new Uint8Array(v.bytes)], { type: v.type }), v.name);
  }
  return f;
}

forEachStorage('memory v3 messages/upload', (storage) => {
  const s = useServer(storage);

  it('turns text, JSON and PDF files into messages, chunked at 25,000 characters', async () => {
    const w = wsName('w');
    const h = new Honcho({ baseURL: s.url, apiKey: 'k', workspaceId: w, maxRetries: 0 } as any);
    const session = await h.session('s1');
    const alice = await h.peer('alice');
    const txt = await session.uploadFile({ filename: 'a.txt', content: Buffer.from('hello from a file'), content_type: 'text/plain' }, alice, { metadata: { src: 'txt' } });
    assert.deepEqual(txt.map((m) => [m.content, m.peerId, m.metadata]), [['hello from a file', 'alice', { src: 'txt' }]]);
    const json = await session.uploadFile({ filename: 'a.json', content: Buffer.from('{"a":[1,2],"b":"é"}'), content_type: 'application/json' }, alice);
    assert.equal(json[0]!.content, '{"a": [1, 2], "b": "é"}');
    const pdf = await session.uploadFile({ filename: 'a.pdf', content: tinyPdf('Hello PDF world'), content_type: 'application/pdf' }, 'alice');
    assert.match(pdf[0]!.content, /^\[Page 1\]\nHello PDF world/);
    const para = 'word '.repeat(4000) + '\n\n';
    const long = await session.uploadFile({ filename: 'long.txt', content: Buffer.from(para.repeat(3)), content_type: 'text/plain' }, alice);
    assert.ok(long.length >= 2 && long.every((m) => m.content.length <= 25_000));
    assert.equal(long.map((m) => m.content).join(''), para.repeat(3));
  });

  it('refuses what it cannot read with the reference statuses', async () => {
    const url = `${s.url}/v3/workspaces/${wsName('w')}/sessions/s/messages/upload`;
    const post = async (f: FormData) => {
      const r = await fetch(url, { method: 'POST', body: f });
      return { status: r.status, body: await r.json() };
    };
    let r = await post(form({ peer_id: 'p', file: { name: 'x.bin', type: 'application/octet-stream', bytes: Buffer.from([1, 2, 3]) } }));
    assert.equal(r.status, 415);
    assert.match(r.body.detail, /^Unsupported file type: application\/octet-stream/);
    r = await post(form({ peer_id: 'p', file: { name: 'x.json', type: 'application/json', bytes: Buffer.from('{nope') } }));
    assert.deepEqual(r, { status: 422, body: { detail: 'Uploaded JSON is invalid' } });
    r = await post(form({ peer_id: 'p', file: { name: 'x.pdf', type: 'application/pdf', bytes: Buffer.from('%PDF-1.4 garbage') } }));
    assert.deepEqual(r, { status: 422, body: { detail: 'Uploaded PDF could not be read' } });
    r = await post(form({ file: { name: 'x.txt', type: 'text/plain', bytes: Buffer.from('x') } }));
    assert.deepEqual(r.body.detail[0].loc, ['body', 'peer_id']);
    r = await post(form({ peer_id: 'p' }));
    assert.deepEqual(r.body.detail[0].loc, ['body', 'file']);
    r = await post(form({ peer_id: 'p', file: { name: 'big.txt', type: 'text/plain', bytes: Buffer.alloc(5_242_881, 97) } }));
    assert.equal(r.status, 413);
    const json = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.ok(json.status >= 400 && json.status < 500);
  });
});
