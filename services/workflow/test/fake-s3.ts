import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small S3-compatible server for tests, on loopback only: path-style
 * PUT/GET/HEAD/DELETE of objects in one bucket, single byte ranges, user
 * metadata, and SigV4 `Authorization` headers that must name the expected
 * access key (the signature itself is checked for form, not recomputed).
 */
export interface FakeObject {
  body: Buffer;
  type: string;
  meta: Record<string, string>;
  modified: Date;
  etag: string;
}

export class FakeS3 {
  readonly objects = new Map<string, FakeObject>();
  readonly requests: Array<{ method: string; key: string; range?: string }> = [];
  /** Requests refused for a missing or malformed signature. */
  unsigned = 0;
  url = '';
  private server?: http.Server;

  constructor(
    readonly bucket = 'wf-content',
    readonly accessKeyId = 'TESTKEY',
    readonly secretAccessKey = 'testsecret',
  ) {}

  get flags(): Record<string, string> {
    return { s3Endpoint: this.url, s3Bucket: this.bucket, s3Region: 'us-east-1', s3AccessKeyId: this.accessKeyId, s3SecretAccessKey: this.secretAccessKey };
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  private xml(res: http.ServerResponse, status: number, code: string, message: string): void {
    const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
    res.writeHead(status, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const [, bucket, ...rest] = u.pathname.split('/');
    const key = rest.map((p) => decodeURIComponent(p)).join('/');
    const method = req.method ?? 'GET';
    const auth = req.headers.authorization ?? '';
    const signed = new RegExp(`^AWS4-HMAC-SHA256 Credential=${this.accessKeyId}/\\d{8}/[a-z0-9-]+/s3/aws4_request, ?SignedHeaders=[a-z0-9;-]+, ?Signature=[0-9a-f]{64}$`).test(auth);
    if (!signed || !req.headers['x-amz-date']) {
      this.unsigned++;
      return this.xml(res, 403, 'AccessDenied', 'Signature required');
    }
    this.requests.push({ method, key, range: req.headers.range });
    if (bucket !== this.bucket) return this.xml(res, 404, 'NoSuchBucket', 'The specified bucket does not exist');
    if (!key) return this.xml(res, 400, 'InvalidRequest', 'Object operations only');
    if (method === 'PUT') {
      if (req.headers['content-encoding']?.includes('aws-chunked')) return this.xml(res, 501, 'NotImplemented', 'aws-chunked uploads are not supported here');
      const len = Number(req.headers['content-length']);
      if (len !== body.length) return this.xml(res, 400, 'IncompleteBody', 'Content-Length does not match the body');
      const meta: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-amz-meta-') && typeof v === 'string') meta[k.slice(11)] = v;
      const etag = `"${createHash('md5').update(body).digest('hex')}"`;
      this.objects.set(key, { body, type: String(req.headers['content-type'] ?? 'binary/octet-stream'), meta, modified: new Date(), etag });
      res.writeHead(200, { ETag: etag, 'Content-Length': 0 });
      return void res.end();
    }
    if (method === 'DELETE') {
      this.objects.delete(key);
      res.writeHead(204);
      return void res.end();
    }
    const o = this.objects.get(key);
    if (method === 'HEAD') {
      if (!o) {
        res.writeHead(404);
        return void res.end();
      }
      res.writeHead(200, this.headersOf(o, o.body.length));
      return void res.end();
    }
    if (method !== 'GET') return this.xml(res, 405, 'MethodNotAllowed', 'Not allowed');
    if (!o) return this.xml(res, 404, 'NoSuchKey', 'The specified key does not exist.');
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (m) {
      const start = Number(m[1]);
      const end = Math.min(m[2] ? Number(m[2]) : o.body.length - 1, o.body.length - 1);
      if (start > end) return this.xml(res, 416, 'InvalidRange', 'The requested range is not satisfiable');
      res.writeHead(206, { ...this.headersOf(o, end - start + 1), 'Content-Range': `bytes ${start}-${end}/${o.body.length}` });
      return void res.end(o.body.subarray(start, end + 1));
    }
    res.writeHead(200, this.headersOf(o, o.body.length));
    res.end(o.body);
  }

  private headersOf(o: FakeObject, length: number): Record<string, string | number> {
    const h: Record<string, string | number> = { 'Content-Length': length, 'Content-Type': o.type, ETag: o.etag, 'Last-Modified': o.modified.toUTCString(), 'Accept-Ranges': 'bytes' };
    for (const [k, v] of Object.entries(o.meta)) h[`x-amz-meta-${k}`] = v;
    return h;
  }
}
