import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { startWorkflow, WsClient, type Msg } from './helpers.ts';

export type Server = Awaited<ReturnType<typeof startWorkflow>>;

/** Raw pixels as tests build and read them (row-major, interleaved). */
export interface Pixels {
  width: number;
  height: number;
  channels: number;
  data: number[];
}

/** Builds a pixel array from a function of (x, y) returning one value per channel. */
export function image(width: number, height: number, channels: 1 | 3 | 4, fn: (x: number, y: number) => number[]): Pixels {
  const data: number[] = [];
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.push(...fn(x, y).slice(0, channels));
  return { width, height, channels, data };
}

/** Writes pixels as a PNG into the server's input folder (for LoadImage / LoadImageMask). */
export async function putInput(srv: Server, name: string, px: Pixels): Promise<string> {
  const file = path.join(srv.cfg.dataDir, 'input', name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const png = await sharp(Buffer.from(px.data), { raw: { width: px.width, height: px.height, channels: px.channels as 1 | 3 | 4 } }).png().toBuffer();
  fs.writeFileSync(file, png);
  return name;
}

/** Reads a saved file of an `executed` output entry through the data dir, as raw pixels. */
export async function readOutput(srv: Server, item: { filename: string; subfolder: string; type: string }): Promise<Pixels> {
  const file = path.join(srv.cfg.dataDir, item.type, item.subfolder, item.filename);
  const { data, info } = await sharp(fs.readFileSync(file)).raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, channels: info.channels, data: [...data] };
}

export interface RunResult {
  messages: Msg[];
  /** node id → the `output` of its `executed` message. */
  outputs: Record<string, any>;
  error?: any;
}

/** Queues a prompt over HTTP and waits for it on the WebSocket. */
export async function run(srv: Server, prompt: Record<string, unknown>, extraData?: Record<string, unknown>): Promise<RunResult> {
  const clientId = randomUUID();
  const ws = new WsClient(srv.url, clientId);
  await ws.opened;
  try {
    const r = await srv.http.post('/prompt', { prompt, client_id: clientId, ...(extraData ? { extra_data: extraData } : {}) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const msgs = await ws.promptDone(r.body.prompt_id);
    const outputs: Record<string, any> = {};
    for (const m of msgs) if (m.type === 'executed') outputs[m.data.node] = m.data.output;
    return { messages: msgs, outputs, error: msgs.find((m) => m.type === 'execution_error')?.data };
  } finally {
    ws.close();
  }
}

/** Runs `graph` with a SaveImage on `[node, slot]` and returns the saved frames. */
export async function saved(srv: Server, graph: Record<string, unknown>, link: [string, number]): Promise<Pixels[]> {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  const r = await run(srv, { ...graph, save: { class_type: 'SaveImage', inputs: { images: link, filename_prefix: prefix } } });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return Promise.all(r.outputs.save.images.map((i: any) => readOutput(srv, i)));
}

/** A mask output rendered through MaskToImage + SaveImage; returns its planes as 0..255 values. */
export async function savedMask(srv: Server, graph: Record<string, unknown>, link: [string, number]): Promise<Pixels[]> {
  const frames = await saved(srv, { ...graph, m2i: { class_type: 'MaskToImage', inputs: { mask: link } } }, ['m2i', 0]);
  return frames.map((f) => ({ width: f.width, height: f.height, channels: 1, data: f.data.filter((_, i) => i % f.channels === 0) }));
}

/** Asserts every sample is within `tol` of the expected one. */
export function near(actual: Pixels, expected: Pixels, tol = 0, what = 'pixels'): void {
  assert.equal(actual.width, expected.width, `${what}: width`);
  assert.equal(actual.height, expected.height, `${what}: height`);
  assert.equal(actual.channels, expected.channels, `${what}: channels`);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < expected.data.length; i++) {
    const d = Math.abs(actual.data[i]! - expected.data[i]!);
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  assert.ok(worst <= tol, `${what}: sample ${at} is ${actual.data[at]}, expected ${expected.data[at]} (tolerance ${tol})`);
}

/** Loads pixels through LoadImage: returns the graph fragment with node `load`. */
export async function loaded(srv: Server, px: Pixels, id = 'load'): Promise<Record<string, unknown>> {
  const name = await putInput(srv, `${randomUUID().slice(0, 8)}.png`, px);
  return { [id]: { class_type: 'LoadImage', inputs: { image: name } } };
}

export const byte = (v: number) => (v <= 0 ? 0 : v >= 1 ? 255 : Math.round(v * 255));

/** The reference's default workflow (its web page's first graph) with a small latent. */
export function defaultWorkflow(ckpt: string, prefix: string, width = 48, height = 32): Record<string, unknown> {
  return {
    '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: ckpt } },
    '5': { class_type: 'EmptyLatentImage', inputs: { width, height, batch_size: 1 } },
    '6': { class_type: 'CLIPTextEncode', inputs: { text: 'beautiful scenery nature glass bottle landscape, , purple galaxy bottle,', clip: ['4', 1] } },
    '7': { class_type: 'CLIPTextEncode', inputs: { text: 'text, watermark', clip: ['4', 1] } },
    '3': {
      class_type: 'KSampler',
      inputs: { seed: 156680208700286, steps: 20, cfg: 8, sampler_name: 'euler', scheduler: 'normal', denoise: 1, model: ['4', 0], positive: ['6', 0], negative: ['7', 0], latent_image: ['5', 0] },
    },
    '8': { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] } },
    '9': { class_type: 'SaveImage', inputs: { filename_prefix: prefix, images: ['8', 0] } },
  };
}
