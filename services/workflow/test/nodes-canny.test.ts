/**
 * Canny against what the reference's own node computed (kornia.filters.canny
 * through comfy_extras/nodes_canny.py; test/fixtures/models-reference-canny.json,
 * written by bench/workflow/models-reference-canny.ts) on the generated
 * images of canny-fixture.ts: the edge maps pixel for pixel, kornia's
 * suppressed magnitude, its Gaussian kernel and its error for crossed
 * thresholds; over HTTP, the node as the reference lists it and a batch of
 * two through LoadImage → ImageBatch → Canny → SaveImage.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { CANNY_GAUSSIAN, cannyEdges } from '../src/nodes/canny.ts';
import { CANNY_CASES, cannyFrame, type CannyCase } from './canny-fixture.ts';
import { startWorkflow } from './helpers.ts';
import { closeTo, readReference } from './models-compare.ts';
import { loaded, run, saved, type Pixels, type Server } from './nodes-helpers.ts';

const ref = readReference('models-reference-canny.json');

function bits(e: Uint8Array): string {
  return Array.from(e, (v) => (v ? '1' : '0')).join('');
}

/** A fixture edge map (packed bits, numpy's packbits order) as '0'/'1' per pixel. */
function expectedBits(c: CannyCase, k: number): string {
  const packed = Buffer.from(ref.cases[c.name].edges[k] as string, 'base64');
  return Array.from({ length: c.width * c.height }, (_, i) => ((packed[i >> 3]! >> (7 - (i & 7))) & 1 ? '1' : '0')).join('');
}

function mismatches(a: string, b: string): number {
  let n = 0;
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) n++;
  return n;
}

describe('cannyEdges (kornia.filters.canny)', () => {
  test("kornia's Gaussian kernel (5, σ 1) in float32", () => {
    assert.deepEqual([...CANNY_GAUSSIAN], ref.gaussian);
  });

  for (const c of CANNY_CASES) {
    test(`${c.name}: ${c.width}×${c.height}×${c.batch}, thresholds ${c.low}/${c.high}: the reference's edges pixel for pixel and its magnitude`, () => {
      const expected = ref.cases[c.name];
      const mags = new Float32Array(c.batch * c.width * c.height);
      for (let k = 0; k < c.batch; k++) {
        const mag = mags.subarray(k * c.width * c.height, (k + 1) * c.width * c.height);
        const e = cannyEdges(cannyFrame(c, k), c.width, c.height, 3, c.low, c.high, { magnitude: mag, batch: c.batch });
        assert.equal(e.reduce((a, v) => a + v, 0), expected.counts[k], `frame ${k}: edge count`);
        assert.equal(mismatches(bits(e), expectedBits(c, k)), 0, `frame ${k}: edge pixels differ`);
      }
      closeTo({ shape: [c.batch, 1, c.height, c.width], data: mags }, expected.magnitude, 1e-6, `${c.name} magnitude`);
    });
  }

  test('an alpha channel is ignored; crossed thresholds and images under 3×3 are the errors the reference raises', () => {
    const c = CANNY_CASES[0]!;
    const rgb = cannyFrame(c, 0);
    const rgba = new Uint8Array(c.width * c.height * 4);
    for (let i = 0; i < c.width * c.height; i++) rgba.set([...rgb.subarray(i * 3, i * 3 + 3), (i * 13) % 256], i * 4);
    assert.equal(bits(cannyEdges(rgba, c.width, c.height, 4, c.low, c.high)), expectedBits(c, 0));
    assert.throws(
      () => cannyEdges(new Uint8Array(8 * 8 * 3), 8, 8, 3, 0.6, 0.3),
      (e: any) => e.message === ref.crossed.message && e.pyType === ref.crossed.type,
    );
    assert.throws(() => cannyEdges(new Uint8Array(2 * 5 * 3), 2, 5, 3, 0.1, 0.2), /Padding size should be less than the corresponding input dimension/);
  });

  test('bounded: a 2048×1536 frame checks for interrupts as it goes, and an interrupt stops it', () => {
    const w = 2048;
    const h = 1536;
    const px = new Uint8Array(w * h * 3);
    for (let i = 0; i < px.length; i++) px[i] = (i * 2654435761) >>> 24;
    let calls = 0;
    cannyEdges(px, w, h, 3, 0.2, 0.5, { progress: () => calls++ });
    assert.ok(calls >= h / 64, `progress called ${calls} times`);
    let n = 0;
    assert.throws(
      () =>
        cannyEdges(px, w, h, 3, 0.2, 0.5, {
          progress: () => {
            if (++n === 3) throw new Error('interrupted');
          },
        }),
      /interrupted/,
    );
  });
});

function casePixels(c: CannyCase, k: number): Pixels {
  return { width: c.width, height: c.height, channels: 3, data: [...cannyFrame(c, k)] };
}

forEachStorage('Canny node', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(() => srv.close());

  test('/object_info lists Canny as the reference does', async () => {
    const info = (await srv.http.get('/object_info/Canny')).body.Canny;
    for (const [key, value] of Object.entries(ref.object_info)) {
      if (key === 'display_name' && value === null) continue; // the reference's V3 schema leaves it unset; the frontend shows the name
      assert.deepEqual(info[key], value, `object_info.${key}`);
    }
  });

  test("a batch of two through LoadImage → ImageBatch → Canny → SaveImage: the reference's edge maps, white on black", async () => {
    const c = CANNY_CASES.find((x) => x.name === 'batch')!;
    const graph = {
      ...(await loaded(srv, casePixels(c, 0), 'a')),
      ...(await loaded(srv, casePixels(c, 1), 'b')),
      both: { class_type: 'ImageBatch', inputs: { image1: ['a', 0], image2: ['b', 0] } },
      canny: { class_type: 'Canny', inputs: { image: ['both', 0], low_threshold: c.low, high_threshold: c.high } },
    };
    const frames = await saved(srv, graph, ['canny', 0]);
    assert.equal(frames.length, 2);
    frames.forEach((f, k) => {
      assert.deepEqual([f.width, f.height, f.channels], [c.width, c.height, 3]);
      const expected = expectedBits(c, k);
      const got = Array.from({ length: c.width * c.height }, (_, i) => {
        const [r, g, b] = f.data.slice(i * 3, i * 3 + 3);
        assert.ok(r === g && g === b && (r === 0 || r === 255), `pixel ${i} is ${r},${g},${b}`);
        return r === 255 ? '1' : '0';
      }).join('');
      assert.equal(mismatches(got, expected), 0, `frame ${k}`);
    });
  });

  test('crossed thresholds and a 2×2 image are node errors, and the server keeps serving', async () => {
    const c = CANNY_CASES[0]!;
    let res = await run(srv, {
      ...(await loaded(srv, casePixels(c, 0))),
      canny: { class_type: 'Canny', inputs: { image: ['load', 0], low_threshold: 0.6, high_threshold: 0.3 } },
      save: { class_type: 'SaveImage', inputs: { images: ['canny', 0], filename_prefix: 'canny' } },
    });
    assert.equal(res.error?.node_id, 'canny');
    assert.equal(res.error.exception_message.trim(), ref.crossed.message);
    assert.equal(res.error.exception_type, ref.crossed.type);
    res = await run(srv, {
      ...(await loaded(srv, { width: 2, height: 2, channels: 3, data: [0, 0, 0, 255, 255, 255, 0, 0, 0, 255, 255, 255] })),
      canny: { class_type: 'Canny', inputs: { image: ['load', 0], low_threshold: 0.1, high_threshold: 0.2 } },
      save: { class_type: 'SaveImage', inputs: { images: ['canny', 0], filename_prefix: 'canny' } },
    });
    assert.equal(res.error?.node_id, 'canny');
    assert.match(res.error.exception_message, /Padding size should be less than the corresponding input dimension/);
    const ok = await saved(srv, { ...(await loaded(srv, casePixels(c, 0))), canny: { class_type: 'Canny', inputs: { image: ['load', 0], low_threshold: c.low, high_threshold: c.high } } }, ['canny', 0]);
    assert.equal(ok.length, 1);
  });
});
