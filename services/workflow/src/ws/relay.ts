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
 * held by another. Frames published in one turn of the event loop, or while
 * the previous statement was on its way, leave together (in order, over one
 * connection); each process delivers what it
 * receives to its own sockets and ignores its own notifications.
 */
export class PgRelay {
  readonly origin = randomUUID();
  private listener?: pg.Client;
  private publisher?: pg.Client;
  private batch: RelayFrame[] = [];
  private scheduled = false;
  private inFlight = false;
  private receiving: Promise<void> = Promise.resolve();
  private sending: Promise<void> = Promise.resolve();
  private lastSweep = 0;
  private closed = false;

  /**
   * @param sockets whether this process holds client sockets (an API
   *   process). Socket frames go on a channel only such processes listen
   *   to; cancels go on a control channel every process listens to. A
   *   worker then never receives, and the database never sends it, the
   *   frames of every prompt that runs anywhere.
   */
  constructor(
    private readonly databaseUrl: string,
    private readonly schema: string,
    private readonly log: { warn(o: object, m: string): void },
    private readonly sockets = true,
  ) {}

  /** A channel per schema, so services and tests sharing one database stay apart. */
  private get channel(): string {
    return `wf_ws_${this.schema}`.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 63);
  }

  private get controlChannel(): string {
    return `wf_wc_${this.schema}`.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 63);
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
      if ((n.channel !== this.channel && n.channel !== this.controlChannel) || !n.payload) return;
      const payload = n.payload;
      // In order: a spilled batch (read from the table) is delivered before the notifications after it.
      this.receiving = this.receiving.then(() => this.receive(payload, deliver)).catch((err) => this.log.warn({ err }, 'a relayed WebSocket batch could not be read'));
    });
    await this.listener.query(`listen "${this.controlChannel}"`);
    if (this.sockets) await this.listener.query(`listen "${this.channel}"`);
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
    if (this.scheduled || this.inFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  /**
   * One statement in flight at a time, over one connection, so notifications
   * arrive in the order they were published; frames published meanwhile
   * leave together with the next one (fewer, fuller notifications when busy).
   */
  private flush(): void {
    if (this.inFlight || this.batch.length === 0) return;
    const frames = this.batch;
    this.batch = [];
    this.inFlight = true;
    this.sending = this.send(frames)
      .catch((err) => this.log.warn({ err }, 'WebSocket frames could not be relayed'))
      .finally(() => {
        this.inFlight = false;
        this.flush();
      });
  }

  private async send(frames: RelayFrame[]): Promise<void> {
    const c = this.publisher;
    if (!c || this.closed) return;
    // Per channel, frames in notifications of at most MAX_NOTIFY bytes, all sent by one statement; a frame too large for one goes through the table.
    const notes: Array<[channel: string, payload: string]> = [];
    const head = `{"o":${JSON.stringify(this.origin)},"f":[`;
    for (const [channel, group] of [
      [this.channel, frames.filter((f) => f.cancel === undefined)],
      [this.controlChannel, frames.filter((f) => f.cancel !== undefined)],
    ] as const) {
      let part: string[] = [];
      let size = 0;
      const close = () => {
        if (part.length) notes.push([channel, `${head}${part.join(',')}]}`]);
        part = [];
        size = 0;
      };
      for (const f of group) {
        const text = JSON.stringify(f);
        if (head.length + text.length + 2 > MAX_NOTIFY) {
          close();
          notes.push([channel, JSON.stringify({ o: this.origin, id: await this.spill(c, `[${text}]`) })]);
          continue;
        }
        if (head.length + size + text.length + 3 > MAX_NOTIFY) close();
        part.push(text);
        size += text.length + 1;
      }
      close();
    }
    if (notes.length === 0) return;
    const calls = notes.map((_, i) => `pg_notify($${2 * i + 1}, $${2 * i + 2})`).join(', ');
    // The usual few-notification statements are named (parsed once per connection, not on every flush); rare long ones are not kept.
    const name = notes.length <= 8 ? `wf_relay_notify_${notes.length}` : undefined;
    await c.query({ name, text: `select ${calls}`, values: notes.flat() });
  }

  private async spill(c: pg.Client, body: string): Promise<number> {
    const now = Date.now();
    const r = await c.query('insert into ws_relay (payload, created_at) values ($1, $2) returning id', [body, now]);
    if (now - this.lastSweep > SPILL_TTL_MS) {
      this.lastSweep = now;
      await c.query('delete from ws_relay where created_at < $1', [now - SPILL_TTL_MS]);
    }
    return Number(r.rows[0].id);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.sending;
    await Promise.all([this.listener?.end().catch(() => undefined), this.publisher?.end().catch(() => undefined)]);
  }
}
