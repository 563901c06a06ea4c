import { createHash, randomUUID } from 'node:crypto';
import type { Redis as RedisClient } from 'ioredis';
import type { RelayFrame } from './relay.ts';

/**
 * The channel of one deployment: API processes on the same database and
 * schema share it; another schema (a parallel test) or another database on
 * the same Redis gets its own. The password never reaches Redis.
 */
export function redisChannel(databaseUrl: string, schema: string): string {
  let where = databaseUrl;
  try {
    const u = new URL(databaseUrl);
    where = `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    /* not a URL: its text names the database well enough */
  }
  const tag = createHash('sha256').update(`${where}\u0000${schema}`).digest('hex').slice(0, 16);
  return `wf:ws:${tag}:${schema.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 63)}`;
}

/**
 * Fans WebSocket frames out across API processes through Redis pub/sub
 * (chosen over LISTEN/NOTIFY when REDIS_URL is set): same contract as
 * PgRelay. Frames published in one turn of the event loop leave as one
 * message over one connection, so they arrive in order; a process ignores
 * its own messages. Redis carries messages of any size, so nothing spills
 * to a table. Frames pass through as they are (fields added later included).
 */
export class RedisRelay {
  readonly origin = randomUUID();
  private sub?: RedisClient;
  private pub?: RedisClient;
  private batch: RelayFrame[] = [];
  private scheduled = false;
  private sending: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly prefix: string;

  /** Cancels go on `<channel>:control`, which every process subscribes to; socket frames only reach processes with `sockets` (API processes). */
  constructor(
    private readonly redisUrl: string,
    readonly channel: string,
    private readonly log: { warn(o: object, m: string): void },
    private readonly sockets = true,
  ) {
    this.prefix = `{"o":${JSON.stringify(this.origin)},"f":`;
  }

  private get controlChannel(): string {
    return `${this.channel}:control`;
  }

  async start(deliver: (frames: RelayFrame[]) => void): Promise<void> {
    const { Redis } = await import('ioredis');
    // Offline commands are queued while reconnecting (Redis restarts lose only what was published meanwhile).
    const opts = { lazyConnect: true, maxRetriesPerRequest: null, connectionName: `workflow-ws-${this.origin.slice(0, 8)}` };
    this.sub = new Redis(this.redisUrl, opts);
    this.pub = new Redis(this.redisUrl, opts);
    for (const c of [this.sub, this.pub]) c.on('error', (err: Error) => this.log.warn({ err }, 'WebSocket relay (Redis) connection failed'));
    try {
      await Promise.all([this.sub.connect(), this.pub.connect()]);
      this.sub.on('message', (channel: string, message: string) => {
        if ((channel !== this.channel && channel !== this.controlChannel) || this.closed) return;
        // Own messages are skipped without parsing them.
        if (message.startsWith(this.prefix)) return;
        let m: { o?: string; f?: RelayFrame[] };
        try {
          m = JSON.parse(message);
        } catch (err) {
          this.log.warn({ err }, 'a relayed WebSocket batch could not be read');
          return;
        }
        if (m.o !== this.origin && Array.isArray(m.f)) deliver(m.f);
      });
      await this.sub.subscribe(...(this.sockets ? [this.channel, this.controlChannel] : [this.controlChannel]));
    } catch (err) {
      this.sub.disconnect();
      this.pub.disconnect();
      throw err;
    }
  }

  publish(frame: RelayFrame): void {
    if (this.closed || !this.pub) return;
    this.batch.push(frame);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const frames = this.batch;
      this.batch = [];
      const pub = this.pub;
      if (!pub || this.closed) return;
      // One connection, commands in order: batches arrive in the order they were published.
      const socketFrames = frames.filter((f) => f.cancel === undefined);
      const cancels = frames.filter((f) => f.cancel !== undefined);
      const sent: Promise<unknown>[] = [];
      if (socketFrames.length) sent.push(pub.publish(this.channel, `${this.prefix}${JSON.stringify(socketFrames)}}`));
      if (cancels.length) sent.push(pub.publish(this.controlChannel, `${this.prefix}${JSON.stringify(cancels)}}`));
      this.sending = Promise.all(sent).catch((err: unknown) => this.log.warn({ err }, 'WebSocket frames could not be relayed'));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // What was published before close still leaves (the tick's batch, then the pending command).
    if (this.scheduled) await new Promise((r) => setImmediate(r));
    this.closed = true;
    await this.sending;
    await Promise.all([this.sub?.quit().catch(() => this.sub?.disconnect()), this.pub?.quit().catch(() => this.pub?.disconnect())]);
  }
}
