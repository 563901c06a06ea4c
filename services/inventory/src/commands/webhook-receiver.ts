import http from 'node:http';
import { parsePythonJson, pythonJsonDumps } from '../events/python-json.ts';

export interface ReceiverOptions {
  port: number;
  showHeaders: boolean;
  /** Where the output goes (stdout by default). */
  write?: (s: string) => void;
}

const PYTHON_VERSION = '3.11';

/**
 * NetBox's `webhook_receiver` management command: listens on localhost,
 * answers every request 200 "Webhook received!", and prints the request line,
 * headers and (JSON) body exactly in the reference's format.
 */
export function startWebhookReceiver(opts: ReceiverOptions): Promise<http.Server> {
  const out = opts.write ?? ((s: string) => void process.stdout.write(s));
  const print = (s = '') => out(s + '\n');
  let counter = 1;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const date = new Date().toUTCString();
      // As http.server.BaseHTTPRequestHandler: an HTTP/1.0 response with only Server and Date, then close.
      req.socket.end(`HTTP/1.0 200 OK\r\nServer: BaseHTTP/0.6 Python/${PYTHON_VERSION}\r\nDate: ${date}\r\n\r\nWebhook received!\n`);
      res.detachSocket?.(req.socket);
      const ip = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
      print(`[${counter}] ${date} ${ip} "${req.method} ${req.url} HTTP/${req.httpVersion}" 200 -`);
      if (opts.showHeaders) {
        for (let i = 0; i < req.rawHeaders.length; i += 2) print(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        print();
      }
      const hasLength = req.headers['content-length'] !== undefined;
      if (hasLength) {
        if (req.headers['content-type'] === 'application/json') {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = parsePythonJson(text);
          } catch (err) {
            // Python prints the traceback and the request is not counted.
            print('----------------------------------------');
            print(`Exception occurred during processing of request from ('${ip}', ${req.socket.remotePort})`);
            print('Traceback (most recent call last):');
            print(`json.decoder.JSONDecodeError: ${(err as Error).message}`);
            print('----------------------------------------');
            return;
          }
          print(pythonJsonDumps(parsed, 4));
        }
      } else {
        print('(No body)');
      }
      print(`Completed request #${counter}`);
      counter++;
      print('------------');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => {
      print(`Listening on port http://localhost:${(server.address() as { port: number }).port}. Stop with CONTROL-C.`);
      resolve(server);
    });
  });
}
