import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { loadPg } from '@svc/storage';

/**
 * One WebSocket frame passed between API processes: for one client (its hub
 * key) or a broadcast to an owner's sockets (`owner` undefined: everyone's).
 * Binary frames travel base64-encoded.
 */
export interface RelayFrame {
  to: string | null;
  /** Not a frame: interrupt this prompt if it runs in the receiving process (shared queue). */
  cancel?: string;
  owner?: string;
  key?: string;
  text?: string;
  bin?: string;
}

/** NOTIFY payloads are limited to 8000 bytes; larger batches go through the ws_relay table. */
const MAX_NOTIFY = 7_000;
const SPILL_TTL_MS = 60_000;

/**
 * Fans WebSocket frames out across API processes that share one PostgreSQL
 * database: a prompt may run in any process while its client's socket is
 * held by another. Frames published in one turn of the event loop leave as
 * one NOTIFY (in order, over one connection); each process delivers what it
 * receives to its own sockets and ignores its own notifications.
 */
export class PgRelay {
  readonly origin = randomUUID();
  private listener?: pg.Client;
  private publisher?: pg.Client;
  private batch: RelayFrame[] = [];
  private scheduled = false;
  private sending: Promise<void> = Promise.resolve();
  private lastSweep = 0;
  private closed = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly schema: string,
    private readonly log: { warn(o: object, m: string): void },
  ) {}

  /** A channel per schema, so services and tests sharing one database stay apart. */
  private get channel(): string {
    return `wf_ws_${this.schema}`.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 63);
  }

  async start(deliver: (frames: RelayFrame[]) => void): Promise<void> {
    const pgm = await loadPg();
    const options = `-c search_path=${this.schema},public`;
    this.listener = new pgm.Client({ connectionString: this.databaseUrl, options });
    // A notification is gone once delivered: its commit need not wait for the disk (a WAL flush per tick otherwise).
    this.publisher = new pgm.Client({ connectionString: this.databaseUrl, options: `${options} -c synchronous_commit=off` });
    for (const c of [this.listener, this.publisher]) c.on('error', (err) => this.log.warn({ err }, 'WebSocket relay connection failed'));
    await Promise.all([this.listener.connect(), this.publisher.connect()]);
    this.listener.on('notification', (n) => {
      if (n.channel !== this.channel || !n.payload) return;
      void this.receive(n.payload, deliver).catch((err) => this.log.warn({ err }, 'a relayed WebSocket batch could not be read'));
    });
    await this.listener.query(`listen "${this.channel}"`);
  }

  private async receive(payload: string, deliver: (frames: RelayFrame[]) => void): Promise<void> {
    const m = JSON.parse(payload) as { o: string; f?: RelayFrame[]; id?: number };
    if (m.o === this.origin) return;
    if (m.f) return deliver(m.f);
    if (m.id === undefined || !this.publisher) return;
    const r = await this.publisher.query('select payload from ws_relay where id = $1', [m.id]);
    if (r.rows[0]) deliver(JSON.parse(r.rows[0].payload as string) as RelayFrame[]);
  }

  publish(frame: RelayFrame): void {
    if (this.closed || !this.publisher) return;
    this.batch.push(frame);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const frames = this.batch;
      this.batch = [];
      // One connection, one batch at a time: notifications arrive in the order they were published.
      this.sending = this.sending.then(() => this.send(frames)).catch((err) => this.log.warn({ err }, 'WebSocket frames could not be relayed'));
    });
  }

  private async send(frames: RelayFrame[]): Promise<void> {
    const c = this.publisher;
    if (!c || this.closed) return;
    const body = JSON.stringify(frames);
    if (body.length + 60 <= MAX_NOTIFY) {
      await c.query('select pg_notify($1, $2)', [this.channel, `{"o":${JSON.stringify(this.origin)},"f":${body}}`]);
      return;
    }
    const now = Date.now();
    const r = await c.query('insert into ws_relay (payload, created_at) values ($1, $2) returning id', [body, now]);
    await c.query('select pg_notify($1, $2)', [this.channel, JSON.stringify({ o: this.origin, id: Number(r.rows[0].id) })]);
    if (now - this.lastSweep > SPILL_TTL_MS) {
      this.lastSweep = now;
      await c.query('delete from ws_relay where created_at < $1', [now - SPILL_TTL_MS]);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.sending;
    await Promise.all([this.listener?.end().catch(() => undefined), this.publisher?.end().catch(() => undefined)]);
  }
}
