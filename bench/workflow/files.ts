/**
 * Upload and /view of a 2 MB PNG, as requests/s against bare Fastify in the
 * same run:
 *   - GET /view?filename=…&type=input against a bare Fastify process serving
 *     the same file with @fastify/static;
 *   - POST /upload/image (multipart, overwrite=true so every request writes
 *     the file) against a bare Fastify process whose @fastify/multipart route
 *     streams the file to disk.
 * Servers run in child processes (the service on SQLite, or PostgreSQL with
 * DATABASE_URL); load comes from autocannon in this process. Uploads are
 * measured with assets on (the default: every upload is also registered as an
 * asset, hashed with blake3) and off (--disable-assets), so the file route's
 * own cost and the asset registration's show separately. Rounds rotate the
 * order of the servers; medians are reported.
 *
 *   npx tsx bench/workflow/files.ts [--duration 5] [--connections 8] [--rounds 3]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    serve: { type: 'string' },
    dir: { type: 'string' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
  },
  strict: false,
});

const FILE = 'bench-2mb.png';

async function serveService(dir: string, assets: boolean) {
  process.env.LOG_REQUESTS = '0';
  const { buildApp } = await import('../../services/workflow/src/app.ts');
  const app = await buildApp({ port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: process.env.DATABASE_URL, pgSchema: `bench_wf_files_${process.pid}`, logLevel: 'warn', runWorkers: true, flags: assets ? {} : { disableAssets: true } });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  process.send!({ address });
}

async function serveBaseline(dir: string) {
  const { default: Fastify } = await import('fastify');
  const { default: fastifyStatic } = await import('@fastify/static');
  const { default: multipart } = await import('@fastify/multipart');
  const { pipeline } = await import('node:stream/promises');
  const app = Fastify();
  await app.register(fastifyStatic, { root: path.join(dir, 'input'), prefix: '/static/' });
  await app.register(multipart, { limits: { fileSize: 100 * 1024 * 1024 } });
  app.post('/upload', async (req) => {
    const file = await req.file();
    if (!file) return { error: 'no file' };
    const target = path.join(dir, 'baseline-upload', file.filename);
    await pipeline(file.file, fs.createWriteStream(target));
    return { name: file.filename };
  });
  fs.mkdirSync(path.join(dir, 'baseline-upload'), { recursive: true });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  process.send!({ address });
}

type Kind = 'service' | 'service-noassets' | 'baseline';

function start(kind: Kind, dir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(import.meta.filename, ['--serve', kind, '--dir', dir], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m: any) => resolve({ child, url: m.address }));
    child.once('exit', (code) => reject(new Error(`${kind} exited with ${code}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function multipartBody(file: Buffer, fields: Record<string, string>): { body: Buffer; contentType: string } {
  const boundary = '----bench' + randomBytes(8).toString('hex');
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${FILE}"\r\nContent-Type: image/png\r\n\r\n`), file, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function load(opts: { url: string; method?: 'GET' | 'POST'; body?: Buffer; headers?: Record<string, string> }): Promise<{ rps: number; p50: number; errors: number }> {
  // autocannon ships no type declarations.
  const { default: autocannon } = (await import('autocannon' as string)) as { default: (o: object) => Promise<any> };
  const r = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    body: opts.body,
    headers: opts.headers,
    connections: Number(args.connections),
    duration: Number(args.duration),
  });
  return { rps: r.requests.average, p50: r.latency.p50, errors: r.errors + r.non2xx };
}

async function main() {
  const sharp = (await import('sharp')).default;
  // Noise does not compress: 836×836 RGB is a PNG of about 2 MB.
  const side = 836;
  const png = await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-wf-files-'));
  fs.mkdirSync(path.join(dir, 'input'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'input', FILE), png);
  const upload = multipartBody(png, { overwrite: 'true', type: 'input' });
  const rounds = Number(args.rounds);
  const res: Record<Kind, { view: number[]; upload: number[]; viewP50: number[]; uploadP50: number[] }> = {
    service: { view: [], upload: [], viewP50: [], uploadP50: [] },
    'service-noassets': { view: [], upload: [], viewP50: [], uploadP50: [] },
    baseline: { view: [], upload: [], viewP50: [], uploadP50: [] },
  };
  const kinds: Kind[] = ['service', 'service-noassets', 'baseline'];
  try {
    for (let round = 0; round < rounds; round++) {
      const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]!);
      for (const kind of order) {
        const s = await start(kind, dir);
        const svc = kind !== 'baseline';
        try {
          const viewUrl = svc ? `${s.url}/view?filename=${FILE}&type=input` : `${s.url}/static/${FILE}`;
          const check = await fetch(viewUrl);
          const got = Buffer.from(await check.arrayBuffer());
          if (check.status !== 200 || !got.equals(png)) throw new Error(`${kind}: /view answered ${check.status} with ${got.length} bytes`);
          await load({ url: viewUrl }); // warm-up
          const v = await load({ url: viewUrl });
          const uploadUrl = svc ? `${s.url}/upload/image` : `${s.url}/upload`;
          const u = await load({ url: uploadUrl, method: 'POST', body: upload.body, headers: { 'content-type': upload.contentType } });
          if (v.errors || u.errors) throw new Error(`${kind}: ${v.errors} view and ${u.errors} upload errors`);
          res[kind]!.view.push(v.rps);
          res[kind]!.viewP50.push(v.p50);
          res[kind]!.upload.push(u.rps);
          res[kind]!.uploadP50.push(u.p50);
        } finally {
          await stop(s.child);
        }
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const s = res.service;
  const n = res['service-noassets'];
  const b = res.baseline;
  const view = [...s.view, ...n.view];
  console.log(`file: ${(png.length / 1024 / 1024).toFixed(2)} MB PNG; ${args.connections} connections, ${args.duration} s per run; medians of ${rounds} rounds; storage ${process.env.DATABASE_URL ? 'postgresql' : 'sqlite'}`);
  console.log(`GET /view                      : ${median(view).toFixed(1)} req/s (p50 ${median([...s.viewP50, ...n.viewP50])} ms)   bare @fastify/static: ${median(b.view).toFixed(1)} req/s (p50 ${median(b.viewP50)} ms)   ratio ${(median(view) / median(b.view)).toFixed(2)}`);
  console.log(`POST /upload/image (assets off): ${median(n.upload).toFixed(1)} req/s (p50 ${median(n.uploadP50)} ms)   bare multipart write: ${median(b.upload).toFixed(1)} req/s (p50 ${median(b.uploadP50)} ms)   ratio ${(median(n.upload) / median(b.upload)).toFixed(2)}`);
  console.log(`POST /upload/image (assets on) : ${median(s.upload).toFixed(1)} req/s (p50 ${median(s.uploadP50)} ms)   ratio ${(median(s.upload) / median(b.upload)).toFixed(2)} (each upload also hashed with blake3 and registered as an asset)`);
}

if (args.serve === 'service') await serveService(args.dir as string, true);
else if (args.serve === 'service-noassets') await serveService(args.dir as string, false);
else if (args.serve === 'baseline') await serveBaseline(args.dir as string);
else await main();
