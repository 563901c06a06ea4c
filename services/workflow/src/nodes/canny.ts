/**
 * The reference's Canny preprocessor (comfy_extras/nodes_canny.py), which is
 * kornia.filters.canny with its defaults (Gaussian 5×5, σ 1; hysteresis on;
 * eps 1e-6) keeping the edge map, here without torch and without weights:
 *
 * 1. grey = 0.299 r + 0.587 g + 0.114 b (kornia's rgb_to_grayscale: a product
 *    then two fused multiply-adds, in float32);
 * 2. a separable Gaussian blur, its 1-D kernel kornia's (exp(−x²/2σ²) over
 *    x = −2…2, normalised), each pass with torch's `reflect` padding;
 * 3. the unnormalised 3×3 Sobel gradients (`spatial_gradient`, `replicate`
 *    padding);
 * 4. magnitude √(gx² + gy² + eps) and the gradient angle rounded to the
 *    nearest 45° (atan2(gy, gx)·4/π, rounded half to even);
 * 5. non-maximum suppression: a pixel stays only where its magnitude is
 *    strictly above both neighbours along that direction (kornia's eight
 *    directional difference kernels; outside the image counts as 0);
 * 6. thresholds: above `high` strong, above `low` weak;
 * 7. hysteresis: kornia repeats "a weak pixel next to a strong one becomes
 *    strong" (8-neighbourhood) until nothing changes, then drops the weak
 *    ones left; that fixed point is the weak pixels 8-connected through weak
 *    pixels to a strong one, found here in one flood fill instead of one pass
 *    over the image per step of the longest chain.
 *
 * Every float step rounds to float32 in torch's order: the convolutions sum
 * sequentially over the kernel in row-major order, as the reference's CPU
 * convolutions were measured to, with fused multiply-adds where torch hands
 * the blur to oneDNN (a batch of more than one, or more than 20480 samples)
 * and a rounded product otherwise. So magnitudes match the reference's CPU
 * result bit for bit but for atan2's last bit, which only moves a pixel whose
 * angle sits on a 22.5° boundary, and ties in the suppression (equal
 * neighbours) fall the same way. (On a GPU the reference's own rounding
 * differs again.)
 *
 * Memory is bounded per frame: the blur, gradient and suppression stages run
 * row by row over small rings of rows (O(width)), and only the edge classes
 * (one byte per pixel) and the flood fill's stack live for the whole frame.
 */
/** A float32 byte level: LoadImage's bytes / 255. */
const LEVEL = Float32Array.from({ length: 256 }, (_, b) => b / 255);
const W_R = Math.fround(0.299);
const W_G = Math.fround(0.587);
const W_B = Math.fround(0.114);
const EPS = Math.fround(1e-6);
const FOUR_OVER_PI = Math.fround(4 / Math.PI);
const f = Math.fround;

/** kornia's get_gaussian_kernel1d(5, 1.0) in float32. */
export const CANNY_GAUSSIAN: Float32Array = (() => {
  const g = [-2, -1, 0, 1, 2].map((x) => f(Math.exp(f(-(x * x) / 2))));
  let sum = 0;
  for (const v of g) sum = f(sum + v);
  return Float32Array.from(g, (v) => f(v / sum));
})();

/** Its five taps. */
const [K0, K1, K2, K3, K4] = CANNY_GAUSSIAN;

/** (dy, dx) of the neighbour each of kornia's NMS kernels subtracts, by direction index (angle / 45° mod 8). */
const NEIGHBOUR_DY = [0, 1, 1, 1, 0, -1, -1, -1];
const NEIGHBOUR_DX = [1, 1, 0, -1, -1, -1, 0, 1];

/** torch's `reflect` index: the edge row or column is not repeated. */
function reflect(i: number, n: number): number {
  return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
}

/** torch.round: half to even. */
function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** The magnitude at column `x` of the row `dy` away (above, this row, below); 0 outside the image (the NMS convolution's zero padding). */
function neighbour(above: Float32Array | undefined, row: Float32Array, below: Float32Array | undefined, x: number, dy: number, W: number): number {
  const r = dy < 0 ? above : dy > 0 ? below : row;
  return r !== undefined && x >= 0 && x < W ? r[x]! : 0;
}

/** A stage that makes row `y` of its output into `out` (rows asked for in increasing order, through a Rows ring). */
interface RowStage {
  make(y: number, out: Float32Array): void;
}

/** A ring of the last rows a stage made, each made once while rows are asked for in increasing order. */
class Rows {
  readonly #tags = new Int32Array(8).fill(-1);
  readonly #rows: Float32Array[];
  constructor(
    length: number,
    private readonly stage: RowStage,
  ) {
    this.#rows = Array.from({ length: 8 }, () => new Float32Array(length));
  }
  get(y: number): Float32Array {
    const s = y & 7;
    const row = this.#rows[s]!;
    if (this.#tags[s] !== y) {
      this.stage.make(y, row);
      this.#tags[s] = y;
    }
    return row;
  }
}

export interface CannyOptions {
  /** Called every few rows (the node's interrupt check). */
  progress?: () => void;
  /** Receives kornia's first output, the magnitude after non-maximum suppression (width × height). */
  magnitude?: Float32Array;
  /**
   * How many frames the reference's call holds (default 1). It picks torch's
   * CPU convolution: oneDNN (fused multiply-adds) for more than one image or
   * more than 20480 input samples, else the native one (product, then sum).
   */
  batch?: number;
}

/** torch's choice of oneDNN for a float32 CPU conv2d with one group and a 1×5 or 5×1 kernel (ConvParams::use_mkldnn). */
function oneDnn(batch: number, rows: number, cols: number): boolean {
  return batch > 1 || batch * rows * cols > 20480;
}

export class CannyError extends Error {
  constructor(
    message: string,
    readonly pyType: string,
  ) {
    super(message);
  }
}

/** The checks kornia.filters.canny and its padding make, with the reference's messages. */
export function checkCanny(width: number, height: number, low: number, high: number): void {
  if (!(low <= high)) throw new CannyError(`Invalid input thresholds. low_threshold should be smaller than the high_threshold. Got: ${low}>${high}`, 'BaseError');
  if (!(low > 0 && low < 1)) throw new CannyError(`Invalid low threshold. Should be in range (0, 1). Got: ${low}`, 'BaseError');
  if (!(high > 0 && high < 1)) throw new CannyError(`Invalid high threshold. Should be in range (0, 1). Got: ${high}`, 'BaseError');
  // torch's reflect padding (2 each side for the 5×5 blur) needs 3 rows and columns; its message.
  if (width < 3 || height < 3) {
    throw new CannyError(`Padding size should be less than the corresponding input dimension, but got: padding (2, 2) at dimension ${width < 3 ? 3 : 2} of input [1, 1, ${height}, ${width}]`, 'RuntimeError');
  }
}

/**
 * Grey rows (the 8-bit frame's, `channels` 3 or 4 interleaved, alpha
 * ignored) blurred across by the 5-tap kernel, each pass with torch's
 * `reflect` padding.
 */
class AcrossBlur implements RowStage {
  /** The grey row with its reflected borders: padded[i] = grey[xs[i]]. */
  readonly #padded: Float32Array;
  readonly #xs: Int32Array;
  constructor(
    private readonly pixels: Uint8Array,
    private readonly W: number,
    private readonly channels: number,
    private readonly fuse: boolean,
  ) {
    this.#padded = new Float32Array(W + 4);
    this.#xs = Int32Array.from({ length: W + 4 }, (_, i) => reflect(i - 2, W));
  }
  make(y: number, out: Float32Array): void {
    const { pixels, W, channels } = this;
    const padded = this.#padded;
    const xs = this.#xs;
    const o = y * W * channels;
    for (let x = 0, p = o; x < W; x++, p += channels) {
      // r·w_r, then addcmul twice (fused: the product is exact in double, one rounding).
      const v = f(LEVEL[pixels[p]!]! * W_R);
      const u = f(v + LEVEL[pixels[p + 1]!]! * W_G);
      padded[x + 2] = f(u + LEVEL[pixels[p + 2]!]! * W_B);
    }
    padded[0] = padded[xs[0]! + 2]!;
    padded[1] = padded[xs[1]! + 2]!;
    padded[W + 2] = padded[xs[W + 2]! + 2]!;
    padded[W + 3] = padded[xs[W + 3]! + 2]!;
    if (this.fuse) blurFused(padded, padded, padded, padded, padded, 0, 1, 2, 3, 4, W, out);
    else blurRounded(padded, padded, padded, padded, padded, 0, 1, 2, 3, 4, W, out);
  }
}

/** The across-blurred rows blurred down (reflect padding). */
class DownBlur implements RowStage {
  constructor(
    private readonly across: Rows,
    private readonly W: number,
    private readonly H: number,
    private readonly fuse: boolean,
  ) {}
  make(y: number, out: Float32Array): void {
    const { across, H } = this;
    const r0 = across.get(reflect(y - 2, H));
    const r1 = across.get(reflect(y - 1, H));
    const r2 = across.get(y);
    const r3 = across.get(reflect(y + 1, H));
    const r4 = across.get(reflect(y + 2, H));
    if (this.fuse) blurFused(r0, r1, r2, r3, r4, 0, 0, 0, 0, 0, this.W, out);
    else blurRounded(r0, r1, r2, r3, r4, 0, 0, 0, 0, 0, this.W, out);
  }
}

/**
 * The five taps in order over five rows (each read from its offset), each sum rounded to float32 (from 0: 0 + the
 * first product). A float32 product is exact in double: one rounding is the fused multiply-add (oneDNN's).
 */
function blurFused(r0: Float32Array, r1: Float32Array, r2: Float32Array, r3: Float32Array, r4: Float32Array, o0: number, o1: number, o2: number, o3: number, o4: number, W: number, out: Float32Array): void {
  for (let x = 0; x < W; x++) out[x] = f(f(f(f(f(0 + r0[x + o0]! * K0) + r1[x + o1]! * K1) + r2[x + o2]! * K2) + r3[x + o3]! * K3) + r4[x + o4]! * K4);
}

/** As blurFused with each product rounded before its sum (torch's native convolution). */
function blurRounded(r0: Float32Array, r1: Float32Array, r2: Float32Array, r3: Float32Array, r4: Float32Array, o0: number, o1: number, o2: number, o3: number, o4: number, W: number, out: Float32Array): void {
  for (let x = 0; x < W; x++) out[x] = f(f(f(f(f(0 + f(r0[x + o0]! * K0)) + f(r1[x + o1]! * K1)) + f(r2[x + o2]! * K2)) + f(r3[x + o3]! * K3)) + f(r4[x + o4]! * K4));
}

/** Sobel gradients of the blurred rows: magnitude in [0, W), direction index in [W, 2W). */
class Gradient implements RowStage {
  constructor(
    private readonly blurred: Rows,
    private readonly W: number,
    private readonly H: number,
    private readonly lowF: number,
    /** Directions everywhere (the magnitude output wants every pixel's suppression), not only above `low`. */
    private readonly everywhere: boolean,
  ) {}
  make(y: number, out: Float32Array): void {
    const { blurred, W, H, lowF, everywhere } = this;
    const a = blurred.get(Math.max(0, y - 1));
    const b = blurred.get(y);
    const c = blurred.get(Math.min(H - 1, y + 1));
    for (let x = 0; x < W; x++) {
      const l = x === 0 ? 0 : x - 1;
      const r = x === W - 1 ? W - 1 : x + 1;
      const al = a[l]!;
      const ar = a[r]!;
      const cl = c[l]!;
      const cr = c[r]!;
      // Row-major over the kernel, zero taps skipped (adding ±0 changes nothing).
      const gx = f(f(f(f(f(-al + ar) - 2 * b[l]!) + 2 * b[r]!) - cl) + cr);
      const gy = f(f(f(f(f(-al - 2 * a[x]!) - ar) + cl) + 2 * c[x]!) + cr);
      const m = f(Math.sqrt(f(f(f(gx * gx) + f(gy * gy)) + EPS)));
      out[x] = m;
      // The direction serves only this pixel's suppression, and a magnitude at or below the low threshold is no edge
      // whichever way it points: atan2 (most of this stage's time) only where it can matter.
      out[W + x] = m > lowF || everywhere ? direction(gx, gy) : 0;
    }
  }
}

/** The gradient's angle rounded to the nearest 45°, as a direction index 0–7. */
function direction(gx: number, gy: number): number {
  const q = roundHalfEven(f(f(Math.atan2(gy, gx)) * FOUR_OVER_PI));
  return ((q % 8) + 8) % 8;
}

/** Non-maximum suppression and the thresholds, row by row: the classes 0 none, 1 weak, 2 strong (and the suppressed magnitudes into `mag`). */
function suppress(gradient: Rows, W: number, H: number, lowF: number, highF: number, mag: Float32Array | undefined, progress: (() => void) | undefined): Uint8Array {
  const cls = new Uint8Array(W * H);
  for (let y = 0; y < H; y++) {
    suppressRow(y > 0 ? gradient.get(y - 1) : undefined, gradient.get(y), y < H - 1 ? gradient.get(y + 1) : undefined, W, lowF, highF, mag, y * W, cls);
    if ((y & 63) === 63) progress?.();
  }
  return cls;
}

function suppressRow(above: Float32Array | undefined, row: Float32Array, below: Float32Array | undefined, W: number, lowF: number, highF: number, mag: Float32Array | undefined, at: number, cls: Uint8Array): void {
  for (let x = 0; x < W; x++) {
    const m = row[x]!;
    if (m <= lowF && !mag) continue; // class 0 (cls starts zeroed), suppressed or not
    const d = row[W + x]!;
    const e = (d + 4) % 8;
    const v = m > neighbour(above, row, below, x + NEIGHBOUR_DX[d]!, NEIGHBOUR_DY[d]!, W) && m > neighbour(above, row, below, x + NEIGHBOUR_DX[e]!, NEIGHBOUR_DY[e]!, W) ? m : 0;
    if (mag) mag[at + x] = v;
    cls[at + x] = v > highF ? 2 : v > lowF ? 1 : 0;
  }
}

/** Hysteresis: weak pixels (1) reached from a strong one (2) through weak ones become strong (3 once reached). */
function hysteresis(cls: Uint8Array, W: number, H: number, progress: (() => void) | undefined): void {
  let stack: Int32Array = new Int32Array(1024);
  for (let s = 0; s < W * H; s++) {
    if ((s & 0xfffff) === 0xfffff) progress?.();
    if (cls[s] !== 2) continue;
    stack[0] = s;
    stack = flood(cls, W, H, stack);
  }
}

/** Floods from the pixel at stack[0] through weak pixels, marking them 3 (strong, reached; not a seed again); returns the stack (grown if it had to). */
function flood(cls: Uint8Array, W: number, H: number, stack: Int32Array): Int32Array {
  let top = 1;
  while (top > 0) {
    const p = stack[--top]!;
    const py = (p / W) | 0;
    const px = p - py * W;
    for (let dy = -1; dy <= 1; dy++) {
      const yy = py + dy;
      if (yy < 0 || yy >= H) continue;
      for (let dx = -1; dx <= 1; dx++) {
        const xx = px + dx;
        if (xx < 0 || xx >= W) continue;
        const q = yy * W + xx;
        if (cls[q] !== 1) continue;
        cls[q] = 3;
        if (top === stack.length) {
          const grown = new Int32Array(stack.length * 2);
          grown.set(stack);
          stack = grown;
        }
        stack[top++] = q;
      }
    }
  }
  return stack;
}

/**
 * kornia.filters.canny(image, low, high)[1] of one 8-bit frame (`channels`
 * 3 or 4, interleaved; alpha is ignored): 1 where an edge is, else 0.
 * Each stage is a small function of its own, so that V8 optimises each once
 * with its own type feedback (one function holding every loop was compiled
 * seven times in a fresh server's first Canny prompts, each time the
 * execution reached a loop not yet run).
 */
export function cannyEdges(pixels: Uint8Array, width: number, height: number, channels: number, low: number, high: number, opts: CannyOptions = {}): Uint8Array {
  checkCanny(width, height, low, high);
  const W = width;
  const H = height;
  const lowF = f(low);
  const batch = opts.batch ?? 1;
  const across = new Rows(W, new AcrossBlur(pixels, W, channels, oneDnn(batch, H, W + 4)));
  const blurred = new Rows(W, new DownBlur(across, W, H, oneDnn(batch, H + 4, W)));
  const gradient = new Rows(2 * W, new Gradient(blurred, W, H, lowF, opts.magnitude !== undefined));
  const cls = suppress(gradient, W, H, lowF, f(high), opts.magnitude, opts.progress);
  hysteresis(cls, W, H, opts.progress);
  // The classes become the edge map in place (no second plane).
  for (let i = 0; i < W * H; i++) cls[i] = cls[i]! >= 2 ? 1 : 0;
  return cls;
}
