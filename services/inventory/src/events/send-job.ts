// A webhook request as the delivery worker hands it to the sender (the send thread, or its own
// thread): the part every delivery of one webhook configuration shares (method, URL, headers,
// secret, limits), built once and reused while the webhook is unchanged, and the part of each
// delivery (body, webhook-id, timestamp; the signatures are computed where the body's bytes are).

import type { OutgoingRequest } from './sender.ts';
import { hookSignature, standardWebhookSignature } from './signatures.ts';

/** What the deliveries of one webhook configuration send alike. */
export interface RequestHead {
  method: string;
  url: string;
  /**
   * In send order. `webhook-id` and `webhook-timestamp` are present (their values are each
   * delivery's), and when `secret` is set so are `webhook-signature` and `X-Hook-Signature`.
   */
  headers: Array<[string, string]>;
  /** Signs with this secret (both schemes), or sends unsigned. */
  secret: string | null;
  timeoutMs: number;
  sslVerification: boolean;
  caFilePath: string | null;
}

/** One request to send: its delivery's id (stop requests name it), shared head and own values. */
export interface SendJob {
  id: number;
  head: RequestHead;
  messageId: string;
  timestamp: number;
  body: string;
}

/** A head as the sender uses it: headers flattened once (name, value, …) with the slots each request fills in. */
export interface CompiledHead {
  head: RequestHead;
  flat: string[];
  id: number;
  ts: number;
  sig: number;
  hook: number;
  length: number;
}

export function compileHead(head: RequestHead): CompiledHead {
  const flat: string[] = [];
  let id = -1;
  let ts = -1;
  let sig = -1;
  let hook = -1;
  for (const [k, v] of head.headers) {
    // Content-Length is the body's, last (node:http's case-insensitive setHeader replaced any other the same way).
    if (k.length === 14 && k.toLowerCase() === 'content-length') continue;
    if (k === 'webhook-id') id = flat.length + 1;
    else if (k === 'webhook-timestamp') ts = flat.length + 1;
    else if (head.secret !== null && k === 'webhook-signature') sig = flat.length + 1;
    else if (head.secret !== null && k === 'X-Hook-Signature') hook = flat.length + 1;
    flat.push(k, v);
  }
  flat.push('Content-Length', '');
  return { head, flat, id, ts, sig, hook, length: flat.length - 1 };
}

/** The request of one job: the head's headers with this delivery's id, timestamp, signatures and length. */
export function outgoing(c: CompiledHead, job: Pick<SendJob, 'messageId' | 'timestamp'> & { body: string | Buffer }): OutgoingRequest {
  const body = typeof job.body === 'string' ? Buffer.from(job.body, 'utf8') : job.body;
  const flat = c.flat.slice();
  if (c.id >= 0) flat[c.id] = job.messageId;
  if (c.ts >= 0) flat[c.ts] = String(job.timestamp);
  const secret = c.head.secret;
  if (secret !== null) {
    if (c.sig >= 0) flat[c.sig] = standardWebhookSignature(secret, job.messageId, job.timestamp, body);
    if (c.hook >= 0) flat[c.hook] = hookSignature(secret, body);
  }
  flat[c.length] = String(body.length);
  const h = c.head;
  return { method: h.method, url: h.url, headers: [], flat, body, timeoutMs: h.timeoutMs, sslVerification: h.sslVerification, caFilePath: h.caFilePath };
}

/** Compiled heads by their JSON text (the send thread receives heads as text), bounded. */
export class HeadCache {
  #m = new Map<string, CompiledHead>();
  get(text: string): CompiledHead {
    let c = this.#m.get(text);
    if (!c) {
      c = compileHead(JSON.parse(text) as RequestHead);
      if (this.#m.size >= 1000) this.#m.delete(this.#m.keys().next().value!);
      this.#m.set(text, c);
    }
    return c;
  }
}
