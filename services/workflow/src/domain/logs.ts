import { symbols } from 'pino';

export interface LogEntry {
  /** ISO time the line was written. */
  t: string;
  m: string;
}

export interface LogSink {
  /** Whether a socket with this client id is connected now. */
  connected(clientId: string): boolean;
  send(clientId: string, data: unknown): void;
}

const CAPACITY = 300;

/**
 * The last lines the service logged (the reference keeps 300 lines of its
 * stdout for /internal/logs), and the WebSocket clients subscribed to new
 * ones. Lines written in one turn of the event loop leave in one `logs`
 * message; a client whose socket has gone is unsubscribed.
 */
export class LogBuffer {
  private readonly entries: LogEntry[] = [];
  private readonly subscribers = new Set<string>();
  private pending: LogEntry[] = [];
  private scheduled = false;
  private lastSize: { cols: number; rows: number } | undefined;
  sink?: LogSink;

  push(m: string): void {
    const entry = { t: new Date().toISOString(), m };
    this.entries.push(entry);
    if (this.entries.length > CAPACITY) this.entries.splice(0, this.entries.length - CAPACITY);
    if (this.subscribers.size === 0) return;
    this.pending.push(entry);
    if (this.pending.length > CAPACITY) this.pending.splice(0, this.pending.length - CAPACITY);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  all(): LogEntry[] {
    return [...this.entries];
  }

  /** The terminal size the reference reports (80x24 when the service has no terminal). */
  size(): { cols: number; rows: number } {
    return { cols: process.stdout.columns ?? 80, rows: process.stdout.rows ?? 24 };
  }

  /** The size when it changed since it was last reported, else null (the reference's update_size). */
  private sizeChange(): { cols: number; rows: number } | null {
    const s = this.size();
    if (this.lastSize && this.lastSize.cols === s.cols && this.lastSize.rows === s.rows) return null;
    this.lastSize = s;
    return s;
  }

  rawView(): { entries: LogEntry[]; size: { cols: number; rows: number } } {
    this.sizeChange();
    return { entries: this.all(), size: this.size() };
  }

  subscribe(clientId: string, enabled: boolean): void {
    if (enabled) this.subscribers.add(clientId);
    else this.subscribers.delete(clientId);
  }

  private flush(): void {
    this.scheduled = false;
    const entries = this.pending;
    this.pending = [];
    if (entries.length === 0 || !this.sink) return;
    const size = this.sizeChange();
    for (const id of [...this.subscribers]) {
      if (!this.sink.connected(id)) {
        this.subscribers.delete(id);
        continue;
      }
      this.sink.send(id, { entries, size });
    }
  }
}

/**
 * Copies every line a pino logger writes into the buffer (the reference
 * intercepts its stdout the same way). Only this logger's own destination
 * is wrapped, so several services in one process keep separate logs.
 */
export function captureLogger(logger: unknown, buffer: LogBuffer): void {
  const stream = (logger as Record<symbol, { write?: (s: string) => unknown } | undefined>)[symbols.streamSym];
  if (!stream || typeof stream.write !== 'function') return;
  const write = stream.write.bind(stream);
  stream.write = (chunk: string) => {
    buffer.push(typeof chunk === 'string' ? chunk : String(chunk));
    return write(chunk);
  };
}
