// The send thread (see send-thread.ts): signs and sends the batches of requests the delivery
// worker posts, and answers each batch with its outcomes once every request in it has ended.

import { parentPort, workerData } from 'node:worker_threads';
import { DestinationGuard, type Cidr } from './guard.ts';
import { HttpSender, Stopper } from './sender.ts';
import { hookSignature, standardWebhookSignature } from './signatures.ts';
import type { SendJob, SendThreadRequest, SendThreadResponse } from './send-thread.ts';

const data = workerData as { allow: Cidr[]; deny: Cidr[] };
const port = parentPort!;
const sender = new HttpSender(new DestinationGuard({ allow: data.allow, deny: data.deny }));
const stoppers = new Map<number, Stopper>();

async function send(job: SendJob) {
  const body = Buffer.from(job.body, 'utf8');
  const headers = job.headers;
  if (job.sign) {
    // The delivery worker placed both signature headers (empty) where they belong in the header order.
    for (const h of headers) {
      if (h[0] === 'webhook-signature') h[1] = standardWebhookSignature(job.sign.secret, job.sign.messageId, job.sign.timestamp, body);
      else if (h[0] === 'X-Hook-Signature') h[1] = hookSignature(job.sign.secret, body);
    }
  }
  const stopper = new Stopper();
  stoppers.set(job.id, stopper);
  try {
    return await sender.send({
      method: job.method,
      url: job.url,
      headers,
      body,
      timeoutMs: job.timeoutMs,
      sslVerification: job.sslVerification,
      caFilePath: job.caFilePath,
      stopper,
    });
  } finally {
    stoppers.delete(job.id);
  }
}

port.on('message', (m: SendThreadRequest) => {
  if (m.stop !== undefined) {
    stoppers.get(m.stop)?.stop();
    return;
  }
  const jobs = JSON.parse(m.jobs!) as SendJob[];
  for (let i = 0; i < jobs.length; i++) jobs[i]!.body = m.bodies![i]!;
  void Promise.all(jobs.map(send)).then((outcomes) => port.postMessage({ batch: m.batch, outcomes: JSON.stringify(outcomes) } satisfies SendThreadResponse));
});
port.postMessage({ ready: true } satisfies SendThreadResponse);
