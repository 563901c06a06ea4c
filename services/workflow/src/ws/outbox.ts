import type { WebSocket } from 'ws';

/** One queued frame: fixed data, or a payload built when it is actually sent (coalesced progress). */
interface Item {
  key?: string;
  data?: string | Buffer;
  build?: () => string;
}

const MAX_INFLIGHT = 32;
const MAX_BUFFERED = 4 * 1024 * 1024;
/** A socket this far behind is dead or hostile: it is dropped rather than let memory grow. */
const MAX_QUEUED = 20_000;

/**
 * A socket's send queue. Frames go out at once while the socket keeps up;
 * when it falls behind they wait here, and a coalescible frame (progress,
 * progress_state, status) replaces its queued predecessor with the same key,
 * so a fast node never floods a slow client and sending never blocks
 * execution.
 */
export class Outbox {
  private readonly queue: Item[] = [];
  private head = 0;
  private readonly byKey = new Map<string, Item>();
  private inflight = 0;
  private closed = false;

  constructor(private readonly ws: WebSocket) {}

  push(item: Item): void {
    if (this.closed) return;
    if (item.key !== undefined) {
      const queued = this.byKey.get(item.key);
      if (queued) {
        queued.data = item.data;
        queued.build = item.build;
        return;
      }
      this.byKey.set(item.key, item);
    }
    this.queue.push(item);
    if (this.queue.length - this.head > MAX_QUEUED) {
      this.close();
      this.ws.terminate();
      return;
    }
    this.pump();
  }

  close(): void {
    this.closed = true;
    this.queue.length = 0;
    this.head = 0;
    this.byKey.clear();
  }

  private corked = false;

  private pump(): void {
    // Frames queued in one turn of the loop leave in one write (one syscall, not one per message).
    const raw = (this.ws as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
    if (raw && !this.corked && this.head < this.queue.length) {
      this.corked = true;
      raw.cork();
      process.nextTick(() => {
        this.corked = false;
        raw.uncork();
      });
    }
    while (this.head < this.queue.length && this.inflight < MAX_INFLIGHT && this.ws.bufferedAmount < MAX_BUFFERED) {
      if (this.ws.readyState !== 1) return;
      const item = this.queue[this.head++]!;
      if (item.key !== undefined) this.byKey.delete(item.key);
      const data = item.build ? item.build() : item.data!;
      this.inflight++;
      this.ws.send(data, () => {
        this.inflight--;
        this.pump();
      });
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
