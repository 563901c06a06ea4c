import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import { Outbox } from './outbox.ts';
import type { RelayFrame } from './relay.ts';

export interface ClientInfo {
  clientId: string;
  features: Record<string, unknown>;
  /** Owner scope (user in multi-user mode, workspace in the hosted runtime). */
  owner: string;
}

interface Client extends ClientInfo {
  ws: WebSocket;
  outbox: Outbox;
}

/** Frames kept for a client id that has no socket yet (it connects after POST /prompt answered), bounded. */
interface Parked {
  frames: Array<{ key?: string; data?: string | Buffer; build?: () => string }>;
  expires: number;
}

const PARK_MAX_FRAMES = 2_000;
const PARK_MAX_CLIENTS = 1_000;
const PARK_TTL_MS = 120_000;

export const BINARY_PREVIEW_IMAGE = 1;
export const BINARY_PREVIEW_IMAGE_WITH_METADATA = 4;

/**
 * The sockets of `/ws`, by client id. Execution messages go to one client;
 * status and interrupts to every socket (of the same owner). A client id with
 * no socket has its frames parked for a while, so a client that opens its
 * socket only after POST /prompt answered still sees its prompt finish.
 */
export class WsHub {
  private readonly clients = new Map<string, Client>();
  private readonly parked = new Map<string, Parked>();
  /**
   * Hosted runtime: sockets are keyed by (owner, client id), so a tenant that
   * reuses another tenant's client id gets a socket of its own and never
   * their messages, and broadcasts reach only the owner's sockets.
   */
  private readonly isolate: boolean;

  /** Other API processes' sockets (PostgreSQL scale-out): frames for a client not held here go there too. */
  private readonly relay?: { publish(f: RelayFrame): void };

  constructor(opts: { isolateOwners?: boolean; relay?: { publish(f: RelayFrame): void } } = {}) {
    this.isolate = opts.isolateOwners === true;
    this.relay = opts.relay;
  }

  /** Frames relayed from another process: delivered to the sockets held here (or parked, like local ones). */
  receive(frames: RelayFrame[]): void {
    for (const f of frames) {
      const data = f.bin !== undefined ? Buffer.from(f.bin, 'base64') : f.text;
      if (data === undefined) continue;
      if (f.to === null) {
        for (const c of this.clients.values()) if (this.mayReceive(c, f.owner)) c.outbox.push({ key: f.key, data });
      } else this.deliverHere(f.to, { key: f.key, data });
    }
  }

  private key(clientId: string, owner: string | undefined): string {
    return this.isolate ? `${owner ?? ''}\u0001${clientId}` : clientId;
  }

  /** A broadcast of one owner's prompt reaches every socket, as the reference does, unless owners are isolated. */
  private mayReceive(c: Client, owner: string | undefined): boolean {
    return owner === undefined || !this.isolate || c.owner === owner;
  }

  get size(): number {
    return this.clients.size;
  }

  /** Registers a socket; a second socket with the same client id replaces the first. */
  connect(ws: WebSocket, requestedId: string | undefined, owner: string, onFirst: (c: ClientInfo) => void): ClientInfo {
    const clientId = requestedId && requestedId.length <= 256 ? requestedId : randomUUID().replaceAll('-', '');
    const key = this.key(clientId, owner);
    const old = this.clients.get(key);
    if (old) {
      old.outbox.close();
      old.ws.close(1000, 'replaced by a new connection');
    }
    const client: Client = { clientId, ws, outbox: new Outbox(ws), features: {}, owner };
    this.clients.set(key, client);
    ws.on('close', () => {
      if (this.clients.get(key) === client) this.clients.delete(key);
      client.outbox.close();
    });
    onFirst(client);
    const parked = this.parked.get(key);
    if (parked) {
      this.parked.delete(key);
      if (parked.expires > Date.now()) for (const f of parked.frames) client.outbox.push(f);
    }
    return client;
  }

  get(clientId: string, owner?: string): ClientInfo | undefined {
    return this.clients.get(this.key(clientId, owner));
  }

  /** Sends a JSON message to one client, or to all (of `owner` when isolated) with `clientId` null. */
  send(type: string, data: unknown, clientId: string | null, owner?: string): void {
    const text = JSON.stringify({ type, data });
    if (clientId === null) {
      for (const c of this.clients.values()) if (this.mayReceive(c, owner)) c.outbox.push({ data: text });
      this.relay?.publish({ to: null, owner, text });
      return;
    }
    this.deliver(this.key(clientId, owner), { data: text });
  }

  /** A message that may replace its queued predecessor with the same key; built when sent. */
  sendCoalesced(clientId: string | null, key: string, build: () => string, owner?: string): void {
    if (clientId === null) {
      for (const c of this.clients.values()) if (this.mayReceive(c, owner)) c.outbox.push({ key, build });
      this.relay?.publish({ to: null, owner, key, text: build() });
      return;
    }
    this.deliver(this.key(clientId, owner), { key, build });
  }

  sendBinary(clientId: string, frame: Buffer, owner?: string): void {
    this.deliver(this.key(clientId, owner), { data: frame });
  }

  features(clientId: string, owner?: string): Record<string, unknown> {
    return this.clients.get(this.key(clientId, owner))?.features ?? {};
  }

  private deliver(clientId: string, frame: Parked['frames'][number]): void {
    if (this.relay && !this.clients.has(clientId)) {
      const data = frame.build ? frame.build() : frame.data!;
      this.relay.publish(typeof data === 'string' ? { to: clientId, key: frame.key, text: data } : { to: clientId, key: frame.key, bin: data.toString('base64') });
    }
    this.deliverHere(clientId, frame);
  }

  private deliverHere(clientId: string, frame: Parked['frames'][number]): void {
    const c = this.clients.get(clientId);
    if (c) {
      c.outbox.push(frame);
      return;
    }
    let p = this.parked.get(clientId);
    if (!p) {
      if (this.parked.size >= PARK_MAX_CLIENTS) this.evictParked();
      p = { frames: [], expires: 0 };
      this.parked.set(clientId, p);
    }
    p.expires = Date.now() + PARK_TTL_MS;
    if (frame.key !== undefined) {
      const same = p.frames.find((f) => f.key === frame.key);
      if (same) {
        same.build = frame.build;
        same.data = frame.data;
        return;
      }
    }
    if (p.frames.length < PARK_MAX_FRAMES) p.frames.push(frame);
  }

  private evictParked(): void {
    const now = Date.now();
    for (const [id, p] of this.parked) if (p.expires <= now) this.parked.delete(id);
    while (this.parked.size >= PARK_MAX_CLIENTS) this.parked.delete(this.parked.keys().next().value!);
  }

  closeAll(): void {
    for (const c of this.clients.values()) {
      c.outbox.close();
      c.ws.terminate();
    }
    this.clients.clear();
    this.parked.clear();
  }
}

/** Binary frame: u32 event type, then (type 1) u32 image type and the bytes, or (type 4) u32 metadata length, metadata JSON, bytes. */
export function previewFrame(image: Buffer, format: 'png' | 'jpeg', meta: Record<string, unknown> | null): Buffer {
  if (meta) {
    const m = Buffer.from(JSON.stringify({ ...meta, image_type: format === 'png' ? 'image/png' : 'image/jpeg' }));
    const head = Buffer.alloc(8);
    head.writeUInt32BE(BINARY_PREVIEW_IMAGE_WITH_METADATA, 0);
    head.writeUInt32BE(m.length, 4);
    return Buffer.concat([head, m, image]);
  }
  const head = Buffer.alloc(8);
  head.writeUInt32BE(BINARY_PREVIEW_IMAGE, 0);
  head.writeUInt32BE(format === 'png' ? 2 : 1, 4);
  return Buffer.concat([head, image]);
}
