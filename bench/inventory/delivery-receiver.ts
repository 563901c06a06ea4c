/**
 * The delivery bench's receiver as a process of its own (bench/inventory/delivery.ts --receiver process):
 * answers every POST with 200 "ok", counts requests, and reports the arrival time (performance.timeOrigin
 * + now, comparable across processes) of each /latency request's request_id to the parent over IPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let received = 0;
let pending: Array<[string, number]> = [];
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received++;
    if (req.url === '/latency') pending.push([JSON.parse(Buffer.concat(chunks).toString()).request_id, performance.timeOrigin + performance.now()]);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
server.keepAliveTimeout = 60_000;
setInterval(() => {
  if (!pending.length) return;
  process.send!({ arrivals: pending });
  pending = [];
}, 10).unref();
process.on('message', (m: { count?: number; close?: boolean }) => {
  if (m.count !== undefined) process.send!({ count: m.count, received });
  if (m.close) {
    server.closeAllConnections();
    server.close();
    process.disconnect();
  }
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
