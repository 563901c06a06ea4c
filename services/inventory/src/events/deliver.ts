import os from 'node:os';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { relaxedTransaction } from '@svc/storage';
import type { InventoryDeps } from '../deps.ts';
import { DELIVER_TASK } from './enqueue.ts';
import { DestinationGuard } from './guard.ts';
import { HttpSender, Stopper, type SendOutcome } from './sender.ts';
import { SendThread } from './send-thread.ts';
import { compileHead, outgoing, type CompiledHead, type RequestHead, type SendJob } from './send-job.ts';
import { retryDelayMs, type DeliverySettings } from './settings.ts';
import { IsolatedTemplates, isTemplate } from './templates.ts';
import { renderRequest } from './request.ts';
import { defaultBody } from './python-json.ts';
import type { HeaderSet } from './headers.ts';
import { readWebhook, type WebhookRow } from './webhooks.ts';

const RECOVER_KEY = 'inventory.deliver:recover';
/** Drain loops per process: two overlap network and database; joins add up to two more for work arriving mid-batch. */
const MAX_LOOPS = 4;

interface DrainRun {
  promise: Promise<number>;
  resolve(n: number): void;
  reject(err: unknown): void;
  total: number;
  error: unknown;
  /** Loops still claiming; started/ended settle the promise once every loop's result is in. */
  loops: number;
  started: number;
  ended: number;
}

interface Claimed {
  id: number;
  message_id: string;
  webhook_id: number | null;
  webhook_name: string;
  context: string;
  attempts: number;
  retry_base: number;
}

/** A claimed row as the driver returns it (PostgreSQL's bigints as strings). */
interface ClaimRow {
  id: number | string;
  message_id: string;
  webhook_id: number | string | null;
  webhook_name: string;
  attempts: number | string;
  retry_base: number | string;
  context: string | null;
}

/**
 * BEGIN and the cycle's settings in one round trip (the statements are a simple query: no parameters), for a worker
 * whose claims hold a lease of `leaseMs`.
 */
function pgCycleBegin(leaseMs: number) {
  return sql.raw(
    // Claims and outcomes are bookkeeping that is safe to repeat: the commit does not wait for the disk (as relaxedTransaction).
    'begin; set local synchronous_commit to off; ' +
      // Every statement of the cycle finds its rows by primary key (ids in hand, or the claim's walk from the cursor),
      // whatever the statistics say: a burst of enqueued deliveries makes them stale (a fresh backlog of thousands looks
      // like a few rows), and a sequential or bitmap scan then reads, and for the claim sorts, the whole backlog each cycle.
      'set local enable_seqscan = off; set local enable_bitmapscan = off; ' +
      // A worker frozen between two statements (a stopped process, a partitioned host: its connection stays open) would
      // hold its rows' locks for ever, and the others' claims skip locked rows: the server ends such a transaction one
      // lease after its last statement, so its claims expire and are taken as a dead worker's would be. A live worker's
      // statements follow each other within milliseconds; one stalled for a whole lease has lost its claims anyway.
      `set local idle_in_transaction_session_timeout = ${Math.max(1, Math.floor(leaseMs))}`,
  );
}

/**
 * PostgreSQL: a worker's transaction on one pooled connection, opened by pgCycleBegin (two round trips fewer
 * per cycle than a transaction followed by its SET statements), committed, or rolled back when `fn` throws.
 */
async function pgCycleTransaction<T>(storage: { db: Kysely<any> }, begin: ReturnType<typeof pgCycleBegin>, fn: (trx: Kysely<any>) => Promise<T>): Promise<T> {
  return storage.db.connection().execute(async (conn) => {
    await begin.execute(conn);
    let out: T;
    try {
      out = await fn(conn);
    } catch (err) {
      await sql.raw('rollback').execute(conn).catch(() => {});
      throw err;
    }
    await sql.raw('commit').execute(conn);
    return out;
  });
}

/** Stops a request the send thread is sending. */
class ThreadStop {
  constructor(
    private readonly thread: SendThread,
    private readonly id: number,
  ) {}
  stop(): void {
    this.thread.stop(this.id);
  }
}

/** A delivery rendered and ready to send. */
interface Prepared {
  base: { deliveryId: number; attempt: number; retryBase: number; startedAt: number; success: boolean; maxRetries: number };
  body: string;
  defaultBody?: boolean;
  /** The attempt log's headers (signatures masked either way): as a list, or (static requests) as the log's pieces. */
  logged: Array<[string, string]>;
  log?: StaticRequest;
  job: SendJob;
}

/**
 * The request of a webhook whose URL, headers and body template hold no template syntax: the same
 * for every delivery but for the body (when it is the default one), webhook-id and timestamp. Built
 * once per webhook configuration (the cache key is every field it depends on, read with each batch).
 */
interface StaticRequest {
  head: RequestHead;
  /** The body_template's text, or null for the default body (the delivery's context). */
  body: string | null;
  /** The attempt log's header JSON in pieces: literal text, and 0 / 1 where the delivery's webhook-id / timestamp go. */
  logParts: Array<string | 0 | 1>;
  /**
   * PostgreSQL: the pieces around the quoted webhook-id and timestamp when the log reads `a, id, b, timestamp, c`, so
   * that the server joins each attempt's header text from them (see PG_INSERT_ATTEMPTS); null for any other order.
   */
  logAround: [string, string, string] | null;
  /** The attempt log's URL (credentials masked). */
  logUrl: string;
}

/** The attempt log's header JSON of one delivery of a static request. */
function loggedJson(parts: Array<string | 0 | 1>, messageId: string, timestamp: number): string {
  let text = '';
  for (const p of parts) text += typeof p === 'string' ? p : JSON.stringify(p === 0 ? messageId : String(timestamp));
  return text;
}

/** An attempt's headers as the log stores them (JSON text, signatures masked). */
function headersText(r: AttemptRecord): string {
  return r.headersJson ?? (r.log ? loggedJson(r.log.logParts, r.messageId!, r.timestamp!) : JSON.stringify(maskHeaders(r.headers)));
}

/** An attempt's error as it is stored: the URL's credentials masked where the message quotes it. */
function maskedError(r: AttemptRecord): string | null {
  return r.error && r.url ? r.error.split(r.url).join(maskUrlCached(r.url)) : (r.error ?? null);
}

/** A text element of a PostgreSQL array literal: bare when PostgreSQL reads it back as itself, else quoted. */
function pgElement(v: string): string {
  const n = v.length;
  if (n === 0) return '""';
  // Long values (templated headers or bodies) are quoted without a scan in JavaScript.
  if (n > 64) return /["\\]/.test(v) ? `"${v.replace(/["\\]/g, '\\$&')}"` : `"${v}"`;
  let bare = true;
  for (let i = 0; i < n; i++) {
    const c = v.charCodeAt(i);
    if (c === 34 || c === 92) return `"${v.replace(/["\\]/g, '\\$&')}"`;
    // white space and control characters (trimmed from bare elements), ',', '{', '}'
    if (c <= 32 || c === 44 || c === 123 || c === 125) bare = false;
  }
  return bare && !(n === 4 && v.toLowerCase() === 'null') ? v : `"${v}"`;
}

/**
 * A PostgreSQL array literal of `values` (one-dimensional): what the pg driver makes of a JS array, without its two
 * regular-expression passes over every element — the cycle's arrays are mostly ids, numbers and short tokens.
 */
export function pgArray(values: ReadonlyArray<string | number | boolean | null | undefined>): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'number') out += String(v);
    else if (typeof v === 'boolean') out += v ? 't' : 'f';
    else out += pgElement(v);
  }
  return out + '}';
}

/** A webhook-id that JSON writes as itself in quotes (every id this service makes: `msg_` and hex digits). */
const PLAIN_ID = /^[0-9A-Za-z_]*$/;

function staticKey(w: WebhookRow, defaultTimeoutMs: number): string {
  return [w.id, w.payload_url, w.http_method, w.http_content_type, w.additional_headers, w.body_template, w.secret, w.timeout ?? defaultTimeoutMs, w.ssl_verification, w.ca_file_path ?? ''].join('\0');
}

/** The head of a rendered request: webhook-id and webhook-timestamp, and the signatures' places when it is signed. */
function headOf(w: WebhookRow, url: string, headers: HeaderSet, timeoutMs: number): RequestHead {
  headers.set('webhook-id', '');
  headers.set('webhook-timestamp', '');
  if (w.secret !== '') {
    // Signed where the body's bytes are (the send thread): the headers hold their place in the order.
    headers.set('webhook-signature', '');
    headers.set('X-Hook-Signature', '');
  }
  return { method: w.http_method, url, headers: headers.entries(), secret: w.secret !== '' ? w.secret : null, timeoutMs, sslVerification: w.ssl_verification, caFilePath: w.ca_file_path };
}

/** The attempt log's headers of one delivery (masked when recorded): the head's, with its webhook-id and timestamp. */
function loggedHeaders(head: RequestHead, messageId: string, timestamp: number): Array<[string, string]> {
  return head.headers.map(([k, v]) => [k, k === 'webhook-id' ? messageId : k === 'webhook-timestamp' ? String(timestamp) : v]);
}

export interface AttemptRecord {
  deliveryId: number;
  attempt: number;
  startedAt: number;
  durationMs: number;
  method: string;
  url: string;
  headers: Array<[string, string]>;
  /** The log's headers as JSON text, masked (instead of `headers`). */
  headersJson?: string;
  /** Instead of both: the static request whose log pieces, with this webhook-id and timestamp, are the headers' JSON. */
  log?: StaticRequest;
  messageId?: string;
  timestamp?: number;
  body: string;
  /** The body was the delivery's default body (its context text): the attempt log need not copy it. */
  defaultBody?: boolean;
  status?: number;
  responseBody?: string;
  error?: string;
  success: boolean;
  /** The webhook is gone: retrying cannot help. */
  permanent?: boolean;
  /** The receiver asked to wait this long (Retry-After). */
  retryAfterMs?: number;
  maxRetries: number;
  /** Attempts made before the last manual requeue (they do not count against the retries). */
  retryBase: number;
}

const ATTEMPT_COLUMNS = [
  'delivery_id', 'attempt', 'worker', 'started_at', 'duration_ms', 'request_method', 'request_url', 'request_headers', 'request_body',
  'request_body_default', 'response_status', 'response_body', 'error', 'success',
];
const attemptSql = new Map<string, string>();

/** `insert into events_delivery_attempt (…) values (…), …` for `rows` rows, in the dialect's placeholders. */
function insertAttemptsSql(kind: string, rows: number): string {
  const key = `${kind}:${rows}`;
  let text = attemptSql.get(key);
  if (text === undefined) {
    const n = ATTEMPT_COLUMNS.length;
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) {
      const ph: string[] = [];
      for (let c = 1; c <= n; c++) ph.push(kind === 'postgres' ? `$${r * n + c}` : '?');
      tuples.push(`(${ph.join(', ')})`);
    }
    text = `insert into events_delivery_attempt (${ATTEMPT_COLUMNS.join(', ')}) values ${tuples.join(', ')}`;
    attemptSql.set(key, text);
  }
  return text;
}

/**
 * PostgreSQL: the attempt rows as one array per column (`unnest`), so the statement's text is the same
 * for every batch and the server parses fourteen parameters instead of fourteen per row.
 */
const PG_ROW_TYPES = ['bigint', 'int', 'bigint', 'float8', 'int', 'text', 'text', 'text', 'text', 'bigint', 'text', 'bool', 'int', 'text', 'text', 'bool'];
const PG_HEAD_TYPES = ['text', 'text', 'text', 'text', 'text'];
/**
 * The attempts of a static request (a webhook without templates: almost every delivery) name their request by an index
 * into the batch's distinct requests (`hi`): the method, the masked URL and the header JSON's text around the quoted
 * webhook-id and timestamp are sent once per request, not once per row, and the server joins each row's header text.
 * The rows stored are those the client used to send whole (and still sends, for templated requests: `m`, `u`, `h`).
 */
const PG_INSERT_ATTEMPTS = `insert into events_delivery_attempt (${ATTEMPT_COLUMNS.join(', ')})
  select a.d, a.n, $1, a.s, a.ms, coalesce(a.m, h.m), coalesce(a.u, h.u),
    coalesce(a.h, h.p0 || '"' || a.mid || '"' || h.p1 || '"' || a.ts || '"' || h.p2), a.b, a.bd, a.st, a.rb, a.e, a.ok
  from unnest(${PG_ROW_TYPES.map((t, i) => `$${i + 2}::${t}[]`).join(', ')}) as a(d, n, s, ms, hi, m, u, h, mid, ts, b, bd, st, rb, e, ok)
  left join unnest(${PG_HEAD_TYPES.map((t, i) => `$${i + 2 + PG_ROW_TYPES.length}::${t}[]`).join(', ')}) with ordinality as h(m, u, p0, p1, p2, i)
    on h.i = a.hi`;
/**
 * PostgreSQL: successes recorded by one array parameter of ids (one plan, however many rows). The ownership test is
 * wrapped in `(…) is true` so that it is no index condition: offered `status = 'sent'`, the planner may scan that
 * status's index entries — every claim of the backlog leaves one behind until vacuum — instead of the 192 ids' keys.
 */
const PG_RECORD_SUCCESS = `update events_delivery set status = 'successful', ended_at = $1, claimed_by = null, claim_expires_at = null,
  last_status_code = $2, last_error = null where id = any($3::bigint[]) and (status = 'sent' and claimed_by = $4) is true`;

const PG_RENEW_CLAIMS = `update events_delivery set claim_expires_at = $1 where id = any($2::bigint[]) and (status = 'sent' and claimed_by = $3) is true`;

const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|x-hook-signature|webhook-signature|x-api-key|api-key|x-auth-token)$|token|secret|password|signature|apikey/i;

/** Header values that carry credentials are masked in the attempt log. */
const secretName = new Map<string, boolean>();

export function maskHeaders(headers: Array<[string, string]>): Array<[string, string]> {
  return headers.map(([k, v]) => {
    // Header names repeat from delivery to delivery: the name test is remembered (bounded).
    let secret = secretName.get(k);
    if (secret === undefined) {
      secret = SECRET_HEADER.test(k);
      if (secretName.size < 1000) secretName.set(k, secret);
    }
    return [k, secret ? maskValue(v) : v];
  });
}

const maskedUrls = new Map<string, string>();

/** maskUrl for the attempt log, remembered per URL (a webhook's URL repeats for every delivery). */
function maskUrlCached(raw: string): string {
  let m = maskedUrls.get(raw);
  if (m === undefined) {
    m = maskUrl(raw);
    if (maskedUrls.size >= 1000) maskedUrls.delete(maskedUrls.keys().next().value!);
    maskedUrls.set(raw, m);
  }
  return m;
}

/** Credentials in a URL (user:password@, ?token=…) are masked in the attempt log too. */
export function maskUrl(raw: string): string {
  try {
    const u = new URL(raw);
    let changed = false;
    if (u.password) {
      u.password = '********';
      changed = true;
    }
    for (const k of [...u.searchParams.keys()]) {
      if (SECRET_HEADER.test(k) || /^(key|api_key|access_token|auth|sig)$/i.test(k)) {
        u.searchParams.set(k, '********');
        changed = true;
      }
    }
    return changed ? u.toString() : raw;
  } catch {
    return raw;
  }
}

/** The attempt log keeps the first 64 KB of a request body. */
export function truncateBody(body: string): string {
  return body.length > 65_536 ? body.slice(0, 65_536) + '…(truncated)' : body;
}

function maskValue(v: string): string {
  const scheme = /^(Bearer|Token|Basic)\s+/i.exec(v);
  return scheme ? `${scheme[0]}********` : '********';
}

/**
 * Sends deliveries: claims due rows in batches (one transaction), sends them
 * concurrently, and records outcomes and retry schedules in one transaction
 * per batch, so the database cost stays per batch rather than per delivery.
 */
export class DeliveryWorker {
  readonly workerId = `${os.hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  readonly engine: IsolatedTemplates;
  readonly sender: HttpSender;
  #inFlight = new Map<number, { stop(): void }>();
  /** Where requests are signed and sent when the machine has a core to spare (settings.sendThread). */
  #thread: SendThread | undefined;
  #staleCheckAt = 0;
  #staleFound = false;
  /**
   * PostgreSQL: the highest queued id this worker has claimed. Claimed rows leave dead index entries (and, in id
   * order, dead row versions) behind until vacuum: a claim that starts at id 0 walks every earlier claim's (in a
   * 12,000-delivery backlog, 7,680 rows skipped for the claim of 192 at 40 % — quadratic). Claims start past it;
   * the ids before it (a requeue, a transaction that committed after a higher id's) are claimed whenever a claim
   * past it comes up short, and at least once a second.
   */
  #queuedFrom = 0;
  #queuedFullAt = 0;
  /**
   * PostgreSQL: the end of the last cycle transaction queued in this process. The loops' cycles run one at a time:
   * run together, the second walked over the first's just-locked rows and both wrote the same heap and index pages
   * (about a fifth of the server's CPU per delivery); a cycle is short next to a batch's sends, so they rarely wait.
   */
  #cycleTail: Promise<unknown> = Promise.resolve();
  #run: DrainRun | undefined;
  #again = false;
  #closed = false;
  #beating = false;
  #beat: NodeJS.Timeout | undefined;
  /** When this worker's committed recovery job runs (ms). */
  #recoveryAt = 0;
  /** Deliveries this worker has claimed and not yet recorded: renewed by the heartbeat, never re-claimed by itself. */
  #held = new Set<number>();
  /** PostgreSQL: how this worker's transactions begin (their settings depend on the lease). */
  readonly #pgBegin: ReturnType<typeof pgCycleBegin>;

  constructor(
    private readonly deps: InventoryDeps,
    readonly settings: DeliverySettings,
  ) {
    this.#pgBegin = pgCycleBegin(settings.leaseMs);
    this.engine = new IsolatedTemplates(settings.jinjaEnvParams, {
      workers: settings.renderWorkers,
      heapMb: settings.renderHeapMb,
      hardTimeoutMs: settings.renderHardTimeoutMs,
    });
    this.sender = new HttpSender(new DestinationGuard({ allow: settings.allow, deny: settings.deny }));
    if (settings.sendThread) {
      this.#thread = new SendThread({ allow: settings.allow, deny: settings.deny });
      // A process that runs workers starts the thread now; others only when they first drain.
      if (deps.config.runWorkers) this.#thread.ready();
    }
  }

  /** Starts the send thread and the render threads; resolves when the send thread can take requests. */
  async warm(): Promise<void> {
    this.engine.warm();
    await this.#thread?.whenReady();
  }

  /**
   * This worker's recovery job: if the process dies, it fires shortly after the
   * claims' lease ends and a live worker re-drains them. One job key per worker
   * (another worker must not move it), placed half a lease beyond the claim's
   * lease end so the claims of the next half lease need no new job; the
   * heartbeat pushes it on while claims are held. `force` re-adds it regardless.
   */
  async #scheduleRecovery(trx: Kysely<any>, now: number, force = false): Promise<number> {
    const lease = this.settings.leaseMs;
    if (!force && this.#recoveryAt >= now + lease + 1000) return 0;
    const at = now + Math.ceil(lease * 1.5) + 1000;
    await this.deps.queue.add(DELIVER_TASK, { recover: this.workerId }, { jobKey: `${RECOVER_KEY}:${this.workerId}`, runAt: new Date(at), maxAttempts: 25 }, trx);
    return at;
  }

  /**
   * After another worker's recovery job drained: if claims of that worker are still past their lease, they could not be
   * taken (PostgreSQL skips rows a frozen claimer's open transaction still locks, until the server ends it one lease
   * later), so the job comes back one lease on instead of leaving them to the next event. Returns whether it did.
   */
  async recoverAgain(claimer: string): Promise<boolean> {
    if (claimer === this.workerId || this.#closed) return false;
    const now = Date.now();
    let q = this.deps.storage.db.selectFrom('events_delivery').select('id').where('status', '=', 'sent').where('claimed_by', '=', claimer).where('claim_expires_at', '<', now);
    if (this.deps.storage.dialect.kind === 'postgres') q = q.where('ended_at', 'is', null);
    if (!(await q.limit(1).executeTakeFirst())) return false;
    const at = new Date(now + this.settings.leaseMs);
    await this.deps.queue.add(DELIVER_TASK, { recover: claimer }, { jobKey: `${RECOVER_KEY}:${claimer}`, runAt: at, maxAttempts: 25 });
    return true;
  }

  /** The caller's transaction committed the recovery job scheduled for `at`. */
  #recoveryCommitted(at: number): void {
    if (at > this.#recoveryAt) this.#recoveryAt = at;
  }

  /**
   * Renews the leases of the claims this worker holds (while a drain runs),
   * so a send may take longer than the lease, while a claimer that died or
   * froze loses its claims one lease after its last heartbeat.
   */
  async #heartbeat(): Promise<void> {
    if (this.#beating) return;
    this.#beating = true;
    try {
      const now = Date.now();
      const held = [...this.#held];
      if (!held.length) return;
      const at = await this.#transaction(async (trx) => {
        let renewed = 0;
        if (this.deps.storage.dialect.kind === 'postgres') {
          // By primary key, as the outcomes are (see PG_RECORD_SUCCESS); only a column no index holds changes, so the
          // rewrite can stay on its page without new index entries.
          const r = await trx.executeQuery(CompiledQuery.raw(PG_RENEW_CLAIMS, [now + this.settings.leaseMs, pgArray(held), this.workerId]));
          renewed = Number(r.numAffectedRows ?? 0);
        } else for (let i = 0; i < held.length; i += 500) {
          const r = await trx
            .updateTable('events_delivery')
            .set({ claim_expires_at: now + this.settings.leaseMs })
            .where('id', 'in', held.slice(i, i + 500))
            .where('status', '=', 'sent')
            .where('claimed_by', '=', this.workerId)
            .executeTakeFirst();
          renewed += Number(r.numUpdatedRows);
        }
        return renewed > 0 ? this.#scheduleRecovery(trx, now, true) : 0;
      });
      this.#recoveryCommitted(at);
    } catch (err) {
      this.deps.log.warn({ err }, 'delivery lease heartbeat failed');
    } finally {
      this.#beating = false;
    }
  }

  /** A transaction of this worker's bookkeeping (claims, outcomes, leases): its commit does not wait for the disk. */
  #transaction<T>(fn: (trx: Kysely<any>) => Promise<T>): Promise<T> {
    return this.deps.storage.dialect.kind === 'postgres' ? pgCycleTransaction(this.deps.storage, this.#pgBegin, fn) : relaxedTransaction(this.deps.storage, fn);
  }

  /** Aborts an in-flight send in this process (stop). */
  abort(deliveryId: number): boolean {
    const c = this.#inFlight.get(deliveryId);
    c?.stop();
    return !!c;
  }

  /**
   * Drains every due delivery; returns how many attempts were made. Each
   * cycle is one transaction that records the previous chunk's outcomes and
   * claims the next chunk, so a worker waits for the database once per chunk
   * (the API shares SQLite's single connection). Two loops overlap so the
   * network and the database do not wait for each other. If the process
   * dies, at most one chunk per loop was sent without being recorded (and is
   * sent again, same webhook-id); claimed rows not yet sent are sent later.
   *
   * One drain runs per process at a time: a call while one runs joins it,
   * adding a loop (up to four) that claims the new work at once, or else
   * making the running loops claim once more before they stop.
   */
  drain(): Promise<number> {
    let run = this.#run;
    if (!run) {
      let resolve!: (n: number) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<number>((res, rej) => ((resolve = res), (reject = rej)));
      run = this.#run = { promise, resolve, reject, total: 0, error: undefined, loops: 0, started: 0, ended: 0 };
      this.#again = false;
      this.#beat ??= setInterval(() => void this.#heartbeat(), Math.max(100, Math.floor(this.settings.leaseMs / 3)));
      this.#beat.unref();
      const current = run;
      const stopBeat = () => {
        if (this.#run === undefined || this.#run === current) {
          clearInterval(this.#beat);
          this.#beat = undefined;
        }
      };
      promise.then(stopBeat, stopBeat);
      this.#startLoop(run);
      this.#startLoop(run);
    } else if (run.loops < MAX_LOOPS) {
      this.#startLoop(run);
    } else {
      this.#again = true;
    }
    return run.promise;
  }

  /**
   * Starts (or extends) a drain right after a write committed, without the
   * queue's job round trip (claim and delete: two more commits before the
   * first send). The committed queue job remains the durable trigger: if this
   * drain fails or the process dies, the job drains later.
   */
  kick(): void {
    if (this.#closed) return;
    this.drain().catch((err) => this.deps.log.warn({ err }, 'delivery drain failed; the queued job retries it'));
  }

  /** No more kicks; resolves once the running drain (if any) has finished. */
  async quiesce(): Promise<void> {
    this.#closed = true;
    await this.#run?.promise.catch(() => {});
  }

  #startLoop(run: DrainRun): void {
    run.loops++;
    run.started++;
    this.#loop(run).then(
      (n) => void (run.total += n),
      (err) => void (run.error ??= err),
    ).finally(() => {
      if (++run.ended < run.started) return;
      if (run.error !== undefined) run.reject(run.error);
      else run.resolve(run.total);
    });
  }

  async #loop(run: DrainRun): Promise<number> {
    let total = 0;
    let pending: AttemptRecord[] = [];
    // A loop leaves the run in the same tick as it decides to stop, so a join after that starts a new run instead of being missed.
    const leave = () => {
      if (--run.loops === 0 && this.#run === run) this.#run = undefined;
    };
    let batch: Claimed[] = [];
    // PostgreSQL: the next batch is claimed first and sent while the last one's outcomes are recorded in a transaction
    // of their own. In one transaction, each loop's next send waited for the recording too, and the cycles (one at a
    // time, see #cycleTail) took longer than the sends: the send thread waited for the database. SQLite keeps one
    // transaction per cycle (its writes take the one write lock in turn anyway).
    const apart = this.deps.storage.dialect.kind === 'postgres';
    let recording: Promise<void> | undefined;
    try {
      for (;;) {
        let webhooks: Map<number, WebhookRow>;
        if (apart) {
          [batch, webhooks] = await this.#claim([]);
          if (pending.length) {
            recording = this.#recordApart(pending);
            // Awaited below; a failure meanwhile is not an unhandled rejection.
            recording.catch(() => {});
          }
        } else [batch, webhooks] = await this.#claim(pending);
        pending = [];
        if (batch.length === 0) {
          if (recording) await recording;
          recording = undefined;
          if (this.#again) {
            this.#again = false;
            continue;
          }
          leave();
          return total;
        }
        total += batch.length;
        pending = await this.#attemptAll(batch, webhooks);
        if (recording) await recording;
        recording = undefined;
      }
    } catch (err) {
      // Claims this loop can no longer record are released to the lease: no longer renewed, and reclaimable once it expires.
      await recording?.catch(() => {});
      for (const r of pending) this.#held.delete(r.deliveryId);
      for (const d of batch) this.#held.delete(d.id);
      leave();
      throw err;
    }
  }

  /** PostgreSQL: records outcomes in a transaction of their own, in turn with the claims (see #loop). */
  async #recordApart(records: AttemptRecord[]): Promise<void> {
    const mine = this.#cycleTail.then(() => this.#transaction((trx) => this.#record(trx, records)));
    this.#cycleTail = mine.catch(() => {});
    try {
      await mine;
    } finally {
      // Recorded, or released to the lease (no longer renewed) when the transaction failed.
      for (const r of records) this.#held.delete(r.deliveryId);
    }
  }

  /** Claimers on this host whose process is gone: their claims are released at once instead of after the lease. */
  async #deadLocalClaimers(db: Kysely<any> = this.deps.storage.db): Promise<string[]> {
    let q = db.selectFrom('events_delivery').select('claimed_by').distinct().where('status', '=', 'sent');
    // PostgreSQL has no index on status (see migration 106): the unfinished deliveries' index narrows the scan.
    if (this.deps.storage.dialect.kind === 'postgres') q = q.where('ended_at', 'is', null);
    const rows = await q.execute();
    const host = os.hostname();
    return rows
      .map((r) => String(r.claimed_by ?? ''))
      .filter((c) => {
        const [h, pid] = c.split(':');
        if (h !== host || !pid || Number(pid) === process.pid) return false;
        try {
          process.kill(Number(pid), 0);
          return false;
        } catch (err) {
          return (err as NodeJS.ErrnoException).code === 'ESRCH';
        }
      });
  }

  /**
   * Claims up to a batch of due deliveries: queued ones first (FIFO), then
   * scheduled retries whose time has come, then (checked at most once a
   * second) deliveries whose claimer died or whose lease ran out. Each
   * select walks an index; on PostgreSQL rows locked by another worker's
   * claim are skipped.
   */
  async #claim(toRecord: AttemptRecord[]): Promise<[Claimed[], Map<number, WebhookRow>]> {
    const { storage } = this.deps;
    const limit = Math.min(this.settings.batchSize, this.settings.concurrency);
    const pg = storage.dialect.kind === 'postgres';
    const lock = sql.raw(pg ? 'for update skip locked' : '');
    // On PostgreSQL `id in (select …)` may be planned as a hash semi-join over a sequential scan of every delivery
    // (the table's statistics lag its churn): `= any(array(…))` runs the locking select once and updates by primary key.
    // Stale claims are looked for at most once a second, but continuously while some are being found.
    const checkStale = this.#staleFound || Date.now() - this.#staleCheckAt >= 1000;
    if (checkStale) this.#staleCheckAt = Date.now();
    // PostgreSQL looks in the cycle's transaction, whose plan settings keep it on the unfinished deliveries' index.
    let dead = checkStale && !pg ? await this.#deadLocalClaimers() : [];
    const now = Date.now();
    const lease = this.settings.leaseMs;
    // Every statement writes, so a SQLite transaction takes the write lock at its first statement
    // (a deferred read-then-write transaction could fail with SQLITE_BUSY when another process commits).
    let recoveryAt = 0;
    // Claims and outcomes are bookkeeping that is safe to repeat (at-least-once): their commits do not wait for the disk.
    // A crash or power loss may undo the last ones; the deliveries are then sent again, with the same webhook-id.
    const cycle = () => this.#transaction(async (trx) => {
      if (pg && checkStale) dead = await this.#deadLocalClaimers(trx);
      if (toRecord.length) await this.#record(trx, toRecord);
      const claimed: ClaimRow[] = [];
      const claim = async (due: ReturnType<typeof sql>) => {
        const r = await sql<ClaimRow>`update events_delivery set
            status = 'sent', claimed_by = ${this.workerId}, started_at = ${now}, attempts = attempts + 1,
            claim_expires_at = ${now + lease}${pg ? sql`, due_at = null` : sql``}
          where ${pg ? sql`id = any(array(${due}))` : sql`id in (${due})`}
          returning id, message_id, webhook_id, webhook_name, attempts, retry_base,
            (select context from events_delivery_context c where c.delivery_id = events_delivery.id) as context`.execute(trx);
        claimed.push(...r.rows);
      };
      if (pg) {
        const from = this.#queuedFrom;
        const full = Date.now() - this.#queuedFullAt >= 1000;
        if (from > 0 && !full) {
          // `(…) is true` keeps the status test out of the index conditions: the primary key is walked from the cursor in id
          // order and the walk stops at the limit. Offered `status = 'queued'` as an index condition, the planner (the
          // statistics of a table this busy are always stale) may fetch every queued row of the backlog and sort them.
          await claim(sql`select id from events_delivery where id > ${from} and (status = 'queued') is true order by id limit ${limit} ${lock}`);
          for (const c of claimed) if (Number(c.id) > this.#queuedFrom) this.#queuedFrom = Number(c.id);
        }
        if (claimed.length < limit) {
          if (from === 0 || full) this.#queuedFullAt = Date.now();
          const before = claimed.length;
          // The unfinished deliveries' partial index in id order (no index holds status, so that the claim is a heap-only update).
          await claim(sql`select id from events_delivery where ended_at is null and (status = 'queued') is true order by id limit ${limit - before} ${lock}`);
          for (let i = before; i < claimed.length; i++) if (Number(claimed[i]!.id) > this.#queuedFrom) this.#queuedFrom = Number(claimed[i]!.id);
        }
      } else await claim(sql`select id from events_delivery where status = 'queued' order by id limit ${limit} ${lock}`);
      if (claimed.length < limit) {
        // PostgreSQL: due_at is set only while a delivery waits as a retry (its own index; the claim clears it).
        await claim(pg
          ? sql`select id from events_delivery where due_at <= ${now} and (status = 'scheduled') is true order by due_at limit ${limit - claimed.length} ${lock}`
          : sql`select id from events_delivery where status = 'scheduled' and next_attempt_at <= ${now} order by next_attempt_at limit ${limit - claimed.length} ${lock}`);
      }
      if (checkStale && claimed.length < limit) {
        const before = claimed.length;
        // Never this worker's own live claims: it is sending or recording them (under load their lease may lapse before the heartbeat).
        const held = [...this.#held];
        const mine = held.length ? sql` and not (claimed_by = ${this.workerId} and id in (${sql.join(held)}))` : sql``;
        await claim(sql`select id from events_delivery where ${pg ? sql`ended_at is null and ` : sql``}status = 'sent'
          and (claim_expires_at < ${now}${dead.length ? sql` or claimed_by in (${sql.join(dead)})` : sql``})${mine} order by id limit ${limit - claimed.length} ${lock}`);
        this.#staleFound = claimed.length > before;
      }
      // If this process dies mid-batch, a job at the lease's end re-drains what it held (heartbeats push it on).
      if (claimed.length) recoveryAt = await this.#scheduleRecovery(trx, now);
      claimed.sort((x, y) => Number(x.id) - Number(y.id));
      // Written out (no spread of the driver's row): once per delivery.
      const rows = claimed.map((x): Claimed => ({
        id: Number(x.id),
        message_id: x.message_id,
        webhook_id: x.webhook_id === null ? null : Number(x.webhook_id),
        webhook_name: x.webhook_name,
        context: x.context ?? '{}',
        attempts: Number(x.attempts),
        retry_base: Number(x.retry_base),
      }));
      // Each webhook's current configuration (as NetBox reads it at send time), in the same round trip's transaction.
      return [rows, await this.#webhooks(trx, rows)] as [Claimed[], Map<number, WebhookRow>];
    });
    let claimedRows: [Claimed[], Map<number, WebhookRow>];
    if (pg) {
      const mine = this.#cycleTail.then(cycle);
      this.#cycleTail = mine.catch(() => {});
      claimedRows = await mine;
    } else claimedRows = await cycle();
    this.#recoveryCommitted(recoveryAt);
    for (const r of toRecord) this.#held.delete(r.deliveryId);
    for (const c of claimedRows[0]) this.#held.add(c.id);
    return claimedRows;
  }

  async #webhooks(trx: Kysely<any>, batch: Claimed[]): Promise<Map<number, WebhookRow>> {
    const ids = [...new Set(batch.map((b) => b.webhook_id).filter((x): x is number => x !== null))];
    const out = new Map<number, WebhookRow>();
    if (!ids.length) return out;
    // PostgreSQL: one statement text whatever the count (no query building per cycle).
    const rows = this.deps.storage.dialect.kind === 'postgres'
      ? (await trx.executeQuery<Record<string, unknown>>(CompiledQuery.raw('select * from extras_webhook where id = any($1::bigint[])', [pgArray(ids)]))).rows
      : await trx.selectFrom('extras_webhook').selectAll().where('id', 'in', ids).execute();
    for (const r of rows) out.set(Number(r.id), readWebhook(r, this.deps.storage.dialect));
    return out;
  }

  /**
   * Renders and sends a batch with each webhook's current configuration (as NetBox does at send
   * time): renders in the render pool, then the requests in the send thread (one message per
   * batch), or on this thread while the send thread starts or where it is turned off.
   */
  async #attemptAll(batch: Claimed[], webhooks: Map<number, WebhookRow>): Promise<AttemptRecord[]> {
    // Each webhook's static request first (once per webhook, not per delivery), so that deliveries of static webhooks
    // are prepared without a promise each.
    const statics = new Map<number, StaticRequest | null>();
    for (const w of webhooks.values()) statics.set(w.id, await this.#staticRequest(w));
    let rendering = false;
    const each = batch.map((d): Prepared | Promise<Prepared | AttemptRecord> => {
      const w = webhooks.get(d.webhook_id ?? -1);
      const fixed = w && statics.get(w.id);
      if (fixed) return this.#prepareStatic(d, w, fixed);
      rendering = true;
      return this.#prepare(d, w);
    });
    const prepared: Array<Prepared | AttemptRecord> = rendering ? await Promise.all(each) : (each as Prepared[]);
    // Contexts (the largest strings of a delivery) are not read again once rendered: dropped now, they die young
    // instead of being kept through the send, long enough to be promoted to the old generation.
    for (const d of batch) d.context = '';
    const ready: Prepared[] = [];
    for (const p of prepared) if (!('deliveryId' in p)) ready.push(p);
    if (ready.length === 0) return prepared as AttemptRecord[];
    let outcomes: SendOutcome[];
    if (this.#thread?.ready()) {
      const thread = this.#thread;
      for (const p of ready) this.#inFlight.set(p.job.id, new ThreadStop(thread, p.job.id));
      try {
        const sending = thread.send(ready.map((p) => p.job));
        // The thread holds its own copy of every body: a default body (the context) is not logged, so not kept here.
        for (const p of ready) if (p.defaultBody) p.body = p.job.body = '';
        outcomes = await sending;
      } finally {
        for (const p of ready) this.#inFlight.delete(p.job.id);
      }
    } else {
      outcomes = await Promise.all(ready.map((p) => this.#sendHere(p.job)));
    }
    let k = 0;
    return prepared.map((p) => ('deliveryId' in p ? p : this.#outcome(p, outcomes[k++]!)));
  }

  /** Per webhook id: its configuration's key and static request (null when templated). */
  #static = new Map<number, { key: string; request: StaticRequest | null }>();
  /** Compiled heads for sends on this thread. */
  #compiled = new WeakMap<RequestHead, CompiledHead>();

  /** The webhook's static request, or null when a template makes each delivery's request its own. */
  async #staticRequest(w: WebhookRow): Promise<StaticRequest | null> {
    const timeoutMs = w.timeout ? w.timeout * 1000 : this.settings.defaultTimeoutMs;
    const key = staticKey(w, timeoutMs);
    const known = this.#static.get(w.id);
    if (known?.key === key) return known.request;
    if (this.#static.size >= 1000) this.#static.clear();
    if (isTemplate(w.payload_url) || isTemplate(w.additional_headers) || isTemplate(w.body_template)) {
      this.#static.set(w.id, { key, request: null });
      return null;
    }
    // No template syntax: rendering needs no worker thread and no context (the default body is the delivery's own).
    const r = await renderRequest(this.engine, { ...w, body_template: '' }, '{}');
    if (r.error) return null;
    const body = w.body_template ? (await renderRequest(this.engine, w, '{}')).body : null;
    const head = headOf(w, r.url, r.headers, timeoutMs);
    const logParts: Array<string | 0 | 1> = [];
    let text = '[';
    head.headers.forEach(([k, v], i) => {
      const sep = i ? ',' : '';
      if (k === 'webhook-id' || k === 'webhook-timestamp') {
        logParts.push(`${text}${sep}[${JSON.stringify(k)},`, k === 'webhook-id' ? 0 : 1);
        text = ']';
      } else text += `${sep}${JSON.stringify(maskHeaders([[k, v]])[0])}`;
    });
    logParts.push(text + ']');
    const around = logParts.length === 5 && logParts[1] === 0 && logParts[3] === 1;
    const made: StaticRequest = {
      head,
      body,
      logParts,
      logAround: around ? [logParts[0] as string, logParts[2] as string, logParts[4] as string] : null,
      logUrl: maskUrlCached(head.url).slice(0, 8192),
    };
    this.#static.set(w.id, { key, request: made });
    return made;
  }

  /** The request of one delivery of a static webhook. */
  #prepareStatic(d: Claimed, w: WebhookRow, fixed: StaticRequest): Prepared {
    const startedAt = Date.now();
    const timestamp = Math.floor(startedAt / 1000);
    const body = fixed.body ?? defaultBody(d.context);
    return {
      base: { deliveryId: d.id, attempt: d.attempts, retryBase: d.retry_base, startedAt, success: false, maxRetries: w.max_retries ?? this.settings.maxRetries },
      body,
      defaultBody: fixed.body === null,
      logged: [],
      log: fixed,
      job: { id: d.id, head: fixed.head, messageId: d.message_id, timestamp, body },
    };
  }

  /** The request of one delivery, or its failed attempt when there is nothing to send. */
  async #prepare(d: Claimed, w: WebhookRow | undefined): Promise<Prepared | AttemptRecord> {
    const startedAt = Date.now();
    const base = { deliveryId: d.id, attempt: d.attempts, retryBase: d.retry_base, startedAt, success: false, maxRetries: w?.max_retries ?? this.settings.maxRetries };
    if (!w) {
      return { ...base, durationMs: 0, method: '', url: '', headers: [], body: '', error: `Webhook ${d.webhook_name} no longer exists.`, permanent: true };
    }
    const timestamp = Math.floor(startedAt / 1000);
    const fixed = await this.#staticRequest(w);
    if (fixed) return this.#prepareStatic(d, w, fixed);
    const method = w.http_method;
    let rendered;
    try {
      // rendered in a worker thread, never on this one
      rendered = await renderRequest(this.engine, w, d.context);
    } catch (err) {
      return { ...base, durationMs: Date.now() - startedAt, method, url: '', headers: [], body: '', error: (err as Error).message };
    }
    const { url, body, headers } = rendered;
    if (rendered.error) {
      // A render that killed its worker thread (heap or hard time limit) would do so again: fail at once.
      const permanent = rendered.error.killedWorker;
      return { ...base, durationMs: Date.now() - startedAt, method, url, headers: headers.entries(), body, error: rendered.error.message, ...(permanent ? { permanent } : {}) };
    }
    const head = headOf(w, url, headers, w.timeout ? w.timeout * 1000 : this.settings.defaultTimeoutMs);
    return {
      base,
      body,
      defaultBody: rendered.defaultBody,
      logged: loggedHeaders(head, d.message_id, timestamp),
      job: { id: d.id, head, messageId: d.message_id, timestamp, body },
    };
  }

  /** Signs and sends one request on this thread. */
  async #sendHere(job: SendJob): Promise<SendOutcome> {
    let c = this.#compiled.get(job.head);
    if (!c) this.#compiled.set(job.head, (c = compileHead(job.head)));
    const r = outgoing(c, job);
    const stopper = new Stopper();
    r.stopper = stopper;
    this.#inFlight.set(job.id, stopper);
    try {
      return await this.sender.send(r);
    } finally {
      this.#inFlight.delete(job.id);
    }
  }

  #outcome(p: Prepared, out: SendOutcome): AttemptRecord {
    const success = out.status !== undefined && out.status >= 200 && out.status < 300;
    let error = out.error;
    if (!error && !success) {
      error = `Status ${out.status} returned with content '${(out.body ?? '').slice(0, 500)}', webhook FAILED to process.`;
    }
    const { job, base } = p;
    // Every field written out (no spread): this runs once per delivery on the worker's thread.
    return {
      deliveryId: base.deliveryId,
      attempt: base.attempt,
      retryBase: base.retryBase,
      startedAt: base.startedAt,
      maxRetries: base.maxRetries,
      durationMs: out.durationMs,
      method: job.head.method,
      url: job.head.url,
      headers: p.logged,
      log: p.log,
      messageId: job.messageId,
      timestamp: job.timestamp,
      body: p.body,
      defaultBody: p.defaultBody,
      status: out.status,
      responseBody: out.body,
      error,
      success,
      retryAfterMs: out.retryAfterMs,
    };
  }

  /** Writes outcomes, retry schedules and attempt rows (inside the caller's transaction). */
  async #record(trx: Kysely<any>, records: AttemptRecord[]): Promise<void> {
    const { storage, queue } = this.deps;
    const d = storage.dialect;
    const now = Date.now();
    {
      const attempts: unknown[][] = [];
      // Successes (the common case) are recorded with one statement per status code.
      const ok = new Map<number, number[]>();
      for (const r of records) {
        if (r.success) {
          const list = ok.get(r.status!) ?? [];
          list.push(r.deliveryId);
          ok.set(r.status!, list);
          continue;
        }
        let status: 'failed' | 'scheduled';
        let next = now;
        const tries = r.attempt - r.retryBase; // tries since enqueue or the last manual requeue, this one included
        if (!r.permanent && tries <= r.maxRetries) {
          status = 'scheduled';
          // A receiver's Retry-After (429/503) lengthens the wait, up to the longest configured delay.
          next = now + Math.max(retryDelayMs(this.settings, tries), Math.min(r.retryAfterMs ?? 0, this.settings.retryMaxMs));
        } else status = 'failed';
        const changed = await trx
          .updateTable('events_delivery')
          .set({
            status,
            next_attempt_at: next,
            ended_at: status === 'scheduled' ? null : now,
            claimed_by: null,
            claim_expires_at: null,
            last_status_code: r.status ?? null,
            last_error: maskedError(r),
            ...(d.kind === 'postgres' ? { due_at: status === 'scheduled' ? next : null } : {}),
          })
          .where('id', '=', r.deliveryId)
          .where('status', '=', 'sent')
          .where('claimed_by', '=', this.workerId)
          .executeTakeFirst();
        if (status === 'scheduled' && Number(changed.numUpdatedRows) > 0) {
          await queue.add(DELIVER_TASK, {}, { jobKey: `inventory.deliver:retry:${r.deliveryId}`, runAt: new Date(next), maxAttempts: 25 }, trx);
        }
      }
      // Deliveries known to exist (a row was just updated): their attempts need no existence check.
      const live = new Set<number>();
      for (const [code, ids] of ok) {
        if (d.kind === 'postgres') {
          // Counted, not returned: when every id was updated (the normal case) all exist; otherwise the check below finds which.
          const r = await trx.executeQuery(CompiledQuery.raw(PG_RECORD_SUCCESS, [now, code, pgArray(ids), this.workerId]));
          if (Number(r.numAffectedRows ?? 0) === ids.length) for (const id of ids) live.add(id);
          continue;
        }
        for (let i = 0; i < ids.length; i += 500) {
          const updated = await trx
            .updateTable('events_delivery')
            .set({ status: 'successful', ended_at: now, claimed_by: null, claim_expires_at: null, last_status_code: code, last_error: null })
            .where('id', 'in', ids.slice(i, i + 500))
            .where('status', '=', 'sent')
            .where('claimed_by', '=', this.workerId)
            .returning('id')
            .execute();
          for (const u of updated) live.add(Number(u.id));
        }
      }
      if (d.kind === 'postgres') return this.#insertAttemptsPg(trx, records, live);
      for (const r of records) {
        attempts.push([
          r.deliveryId,
          r.attempt,
          this.workerId,
          r.startedAt,
          Math.round(r.durationMs * 1000) / 1000,
          r.method,
          maskUrlCached(r.url).slice(0, 8192),
          headersText(r),
          r.defaultBody ? '' : truncateBody(r.body),
          d.bool(r.defaultBody === true),
          r.status ?? null,
          r.responseBody ?? null,
          maskedError(r),
          d.bool(r.success),
        ]);
      }
      // A delivery deleted while in flight keeps no attempt rows.
      const unknown = attempts.map((a) => a[0] as number).filter((id) => !live.has(id));
      if (unknown.length) {
        for (const x of await trx.selectFrom('events_delivery').select('id').where('id', 'in', unknown).execute()) live.add(Number(x.id));
      }
      const keep = attempts.filter((a) => live.has(a[0] as number));
      // One multi-row insert per 200 attempts (a whole cycle), its SQL text built once per row count: no query builder work per delivery.
      for (let i = 0; i < keep.length; i += 200) {
        const rows = keep.slice(i, i + 200);
        await trx.executeQuery(CompiledQuery.raw(insertAttemptsSql(d.kind, rows.length), rows.flat()));
      }
    }
  }

  /** PostgreSQL: the attempt rows of deliveries that still exist, in one statement (see PG_INSERT_ATTEMPTS). */
  async #insertAttemptsPg(trx: Kysely<any>, records: AttemptRecord[], live: Set<number>): Promise<void> {
    const unknown: number[] = [];
    for (const r of records) if (!live.has(r.deliveryId)) unknown.push(r.deliveryId);
    if (unknown.length) {
      // No foreign key on attempt rows (migration 106): the key-share lock keeps a delete from committing between this
      // check and the insert (a delete removes the delivery's attempts itself). A delivery deleted in flight keeps none.
      const q = trx.selectFrom('events_delivery').select('id').where('id', 'in', unknown).forKeyShare();
      for (const x of await q.execute()) live.add(Number(x.id));
    }
    const rows: unknown[][] = PG_ROW_TYPES.map(() => []);
    const [d, n, s, ms, hi, m, u, h, mid, ts, b, bd, st, rb, e, ok] = rows as [number[], number[], number[], number[], Array<number | null>,
      Array<string | null>, Array<string | null>, Array<string | null>, Array<string | null>, Array<number | null>, string[], boolean[],
      Array<number | null>, Array<string | null>, Array<string | null>, boolean[]];
    const heads = new Map<StaticRequest, number>();
    const hm: string[] = [];
    const hu: string[] = [];
    const p0: string[] = [];
    const p1: string[] = [];
    const p2: string[] = [];
    for (const r of records) {
      if (!live.has(r.deliveryId)) continue;
      d.push(r.deliveryId);
      n.push(r.attempt);
      s.push(r.startedAt);
      ms.push(Math.round(r.durationMs * 1000) / 1000);
      const around = r.log?.logAround;
      if (around && PLAIN_ID.test(r.messageId!)) {
        let k = heads.get(r.log!);
        if (k === undefined) {
          heads.set(r.log!, (k = hm.length + 1));
          hm.push(r.method);
          hu.push(r.log!.logUrl);
          p0.push(around[0]);
          p1.push(around[1]);
          p2.push(around[2]);
        }
        hi.push(k);
        m.push(null);
        u.push(null);
        h.push(null);
        mid.push(r.messageId!);
        ts.push(r.timestamp!);
      } else {
        hi.push(null);
        m.push(r.method);
        u.push(maskUrlCached(r.url).slice(0, 8192));
        h.push(headersText(r));
        mid.push(null);
        ts.push(null);
      }
      b.push(r.defaultBody ? '' : truncateBody(r.body));
      bd.push(r.defaultBody === true);
      st.push(r.status ?? null);
      rb.push(r.responseBody ?? null);
      e.push(maskedError(r));
      ok.push(r.success);
    }
    if (!d.length) return;
    await trx.executeQuery(CompiledQuery.raw(PG_INSERT_ATTEMPTS, [this.workerId, ...([...rows, hm, hu, p0, p1, p2] as Array<Array<string | number | boolean | null>>).map((a) => pgArray(a))]));
  }

  close(): void {
    clearInterval(this.#beat);
    this.#beat = undefined;
    this.sender.close();
    void this.#thread?.close();
    void this.engine.close();
  }
}

