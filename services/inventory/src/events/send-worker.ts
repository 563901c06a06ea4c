// The send thread (see send-thread.ts): signs and sends the batches of requests the delivery
// worker posts, and answers each batch with its outcomes once every request in it has ended.

import { parentPort, workerData } from 'node:worker_threads';
import { DestinationGuard, type Cidr } from './guard.ts';
import { HttpSender, Stopper } from './sender.ts';
import { HeadCache, outgoing, type CompiledHead } from './send-job.ts';
import type { SendThreadRequest, SendThreadResponse } from './send-thread.ts';

const data = workerData as { allow: Cidr[]; deny: Cidr[] };
const port = parentPort!;
const sender = new HttpSender(new DestinationGuard({ allow: data.allow, deny: data.deny }));
const stoppers = new Map<number, Stopper>();

const heads = new HeadCache();

async function send(id: number, head: CompiledHead, messageId: string, timestamp: number, body: Buffer) {
  const r = outgoing(head, { messageId, timestamp, body });
  const stopper = new Stopper();
  r.stopper = stopper;
  stoppers.set(id, stopper);
  try {
    return await sender.send(r);
  } finally {
    stoppers.delete(id);
  }
}

port.on('message', (m: SendThreadRequest) => {
  if (m.stop !== undefined) {
    stoppers.get(m.stop)?.stop();
    return;
  }
  const compiled = m.heads!.map((t) => heads.get(t));
  const jobs = m.jobs!;
  const bodies = m.bodies!;
  const count = jobs.length / 5;
  const sends: Array<Promise<unknown>> = new Array(count);
  for (let i = 0, k = 0, at = 0; i < count; i++, k += 5) {
    const bytes = jobs[k + 4] as number;
    sends[i] = send(jobs[k] as number, compiled[jobs[k + 1] as number]!, jobs[k + 2] as string, jobs[k + 3] as number, Buffer.from(bodies, at, bytes));
    at += bytes;
  }
  void Promise.all(sends).then((outcomes) => port.postMessage({ batch: m.batch, outcomes: JSON.stringify(outcomes) } satisfies SendThreadResponse));
});
port.postMessage({ ready: true } satisfies SendThreadResponse);
