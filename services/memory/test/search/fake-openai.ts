/**
 * A local OpenAI-compatible server for tests: `/v1/embeddings` and
 * `/v1/chat/completions` (plain and `stream: true`), with the request log
 * and the answers under the test's control.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { localEmbedding } from '../../src/search/embedding.ts';

export interface FakeRequest {
  path: string;
  auth: string | undefined;
  body: any;
}

export interface FakeOpenAi {
  url: string;
  requests: FakeRequest[];
  /** Answer for a chat request (by its prompt); defaults to "None". */
  answer: (prompt: string) => string;
  /** When set, every request fails with this HTTP status. */
  failWith: number | undefined;
  /** While set, chat requests wait for it before answering (a model that is slow mid-job). */
  gate: Promise<void> | undefined;
  /** Vector length returned by /v1/embeddings (folded by the provider when not 384). */
  dims: number;
  close(): Promise<void>;
}

function embed(text: string, dims: number): number[] {
  const base = Array.from(localEmbedding(text));
  const out: number[] = [];
  while (out.length < dims) out.push(...base);
  return out.slice(0, dims);
}

export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const fake: FakeOpenAi = {
    url: '',
    requests: [],
    answer: () => 'None',
    failWith: undefined,
    gate: undefined,
    dims: 1536,
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400).end('{"error":{"message":"bad json"}}');
        return;
      }
      fake.requests.push({ path: req.url ?? '', auth: req.headers.authorization, body });
      if (req.url === '/v1/chat/completions' && fake.gate) await fake.gate;
      if (fake.failWith) {
        res.writeHead(fake.failWith, { 'content-type': 'application/json' }).end('{"error":{"message":"down"}}');
        return;
      }
      if (req.url === '/v1/embeddings') {
        const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
        const data = inputs.map((t, index) => ({ object: 'embedding', index, embedding: embed(t, fake.dims) }));
        // Out of order on purpose: clients must use `index`.
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: data.reverse(), model: body.model }));
        return;
      }
      if (req.url === '/v1/chat/completions') {
        const prompt = String(body.messages?.at(-1)?.content ?? '');
        const answer = fake.answer(prompt);
        if (!body.stream) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }] }),
          );
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const pieces = answer.match(/.{1,7}/gs) ?? [];
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant' } }] })}\n\n`);
        for (const p of pieces) res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: p } }] })}\n\n`);
        res.end('data: [DONE]\n\n');
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  fake.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}

/** Parses a server-sent event stream into events. */
export function parseSse(text: string): Array<{ event: string; data: any }> {
  return text
    .split('\n\n')
    .filter((b) => b.trim())
    .map((block) => {
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      return { event, data: JSON.parse(data.join('\n')) };
    });
}
