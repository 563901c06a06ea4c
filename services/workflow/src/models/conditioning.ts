/**
 * Conditioning in the model call, as the reference's comfy/samplers.py
 * (process_conds → calc_cond_batch): every CONDITIONING entry may carry an
 * area (latent cells or fractions of the latent), a strength, a mask (with its
 * own strength, optionally shrinking the area to the mask's bounds) and a
 * timestep range (start/end percent). Each entry's prediction is weighted by
 * its multiplier over its area; the predictions are summed and divided by
 * the summed weights. Entries with the same area size and token count run as
 * one batch. Nothing here knows of HTTP or the nodes.
 */
import type { ControlSource } from './control-residuals.ts';
import type { DiscreteSchedule } from './schedules.ts';

/** A float32 tensor in row-major order. */
export interface CondTensor {
  shape: number[];
  data: Float32Array;
  /** SDXL's adm vector for this entry (one row, sd1.ts UNetModel.withAdm); calcCondBatch repeats it per batch item beside the context. */
  y?: Float32Array;
  /** An inpainting UNet's extra input channels for this entry, [B, k, H, W] at the latent's size (UNetModel.withAdm). */
  concat?: Float32Array;
  /** The control (ControlNets, T2I adapters) of the batch's entries, and how many entries the batch holds (calcCondBatch). */
  control?: ControlSource;
  batched?: number;
}

/** One entry ready for sampling: areas resolved to latent cells, masks resized to the latent, percents turned into σ. */
export interface PreparedCond {
  /** [1 or B, T, D] text embedding. */
  context: CondTensor;
  /** [h, w, y, x] in latent cells. */
  area?: [number, number, number, number];
  strength: number;
  /** [n, H, W] at the latent's size. */
  mask?: { data: Float32Array; n: number };
  maskStrength: number;
  /** Skipped while σ > sigmaStart or σ < sigmaEnd. */
  sigmaStart?: number;
  sigmaEnd?: number;
  /** The entry's `control` (ControlNetApply): entries batch together only with the same one. */
  control?: ControlSource;
}

export class ConditioningError extends Error {}

/** Python's round(): halves to the even neighbour. */
export function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** torch.nn.functional.interpolate(mode='bilinear', align_corners=False) of one plane. */
export function resizeBilinear(src: Float32Array, sh: number, sw: number, dh: number, dw: number): Float32Array {
  const out = new Float32Array(dh * dw);
  const sy = sh / dh;
  const sx = sw / dw;
  for (let y = 0; y < dh; y++) {
    const fy = Math.max((y + 0.5) * sy - 0.5, 0);
    const y0 = Math.min(Math.floor(fy), sh - 1);
    const y1 = Math.min(y0 + 1, sh - 1);
    const ly = fy - y0;
    for (let x = 0; x < dw; x++) {
      const fx = Math.max((x + 0.5) * sx - 0.5, 0);
      const x0 = Math.min(Math.floor(fx), sw - 1);
      const x1 = Math.min(x0 + 1, sw - 1);
      const lx = fx - x0;
      const top = src[y0 * sw + x0]! * (1 - lx) + src[y0 * sw + x1]! * lx;
      const bottom = src[y1 * sw + x0]! * (1 - lx) + src[y1 * sw + x1]! * lx;
      out[y * dw + x] = top * (1 - ly) + bottom * ly;
    }
  }
  return out;
}

function num(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ConditioningError(`conditioning ${what} must be a finite number, got ${JSON.stringify(v)}`);
  return v;
}

function isTensor(v: unknown): v is CondTensor {
  return typeof v === 'object' && v !== null && Array.isArray((v as CondTensor).shape) && (v as CondTensor).data instanceof Float32Array;
}

/** resolve_areas_and_cond_masks_multidim + calculate_start_end_timesteps for one entry. */
function resolve(context: CondTensor, opts: Record<string, unknown>, h: number, w: number, schedule: DiscreteSchedule): PreparedCond {
  const c: PreparedCond = { context, strength: opts.strength === undefined ? 1 : num(opts.strength, 'strength'), maskStrength: 1 };
  const area = opts.area;
  if (area !== undefined) {
    if (!Array.isArray(area)) throw new ConditioningError('conditioning area must be a list');
    if (area[0] === 'percentage') {
      // resolve_areas_and_cond_masks_multidim: sizes first, offsets after the half; a video area ([t, h, w, z, y, x]) on a 2-D latent takes its first two of each.
      const a = area.slice(1);
      const half = Math.floor(a.length / 2);
      if (half < 2) throw new ConditioningError(`a percentage area needs at least 4 values, got ${a.length}`);
      const [ph, pw, py, px] = [a[0], a[1], a[half], a[half + 1]].map((v, i) => num(v, `area[${i + 1}]`)) as [number, number, number, number];
      c.area = [Math.max(1, roundHalfEven(ph * h)), Math.max(1, roundHalfEven(pw * w)), roundHalfEven(py * h), roundHalfEven(px * w)];
    } else {
      if (area.length !== 4) throw new ConditioningError(`conditioning area must have 4 values (h, w, y, x), got ${area.length}`);
      c.area = area.map((v, i) => Math.trunc(num(v, `area[${i}]`))) as [number, number, number, number];
    }
    if (c.area.some((v) => v < 0)) throw new ConditioningError(`conditioning area [${c.area.join(', ')}] has a negative value`);
  }
  if (opts.mask !== undefined) {
    const m = opts.mask;
    if (!isTensor(m) || m.shape.length < 2 || m.shape.length > 3) throw new ConditioningError('conditioning mask must be a [B, H, W] mask');
    const mh = m.shape[m.shape.length - 2]!;
    const mw = m.shape[m.shape.length - 1]!;
    const n = m.shape.length === 3 ? m.shape[0]! : 1;
    if (mh < 1 || mw < 1 || n < 1) throw new ConditioningError('conditioning mask is empty');
    let data = m.data;
    if (mh !== h || mw !== w) {
      data = new Float32Array(n * h * w);
      for (let p = 0; p < n; p++) data.set(resizeBilinear(m.data.subarray(p * mh * mw, (p + 1) * mh * mw), mh, mw, h, w), p * h * w);
    }
    c.mask = { data, n };
    if (opts.mask_strength !== undefined) c.maskStrength = num(opts.mask_strength, 'mask_strength');
    if (opts.set_area_to_bounds === true) {
      // The box around every plane's non-zero values, at least 8 cells a side.
      let x0 = Infinity;
      let y0 = Infinity;
      let x1 = -1;
      let y1 = -1;
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) {
          let any = false;
          for (let p = 0; p < n && !any; p++) any = data[p * h * w + y * w + x] !== 0;
          if (!any) continue;
          if (x < x0) x0 = x;
          if (x > x1) x1 = x;
          if (y < y0) y0 = y;
          if (y > y1) y1 = y;
        }
      c.area = x1 < 0 ? [8, 8, 0, 0] : [Math.max(8, y1 - y0 + 1), Math.max(8, x1 - x0 + 1), y0, x0];
    }
  }
  if (opts.control !== undefined && opts.control !== null) {
    if (typeof (opts.control as ControlSource).residuals !== 'function') throw new ConditioningError('conditioning control is not a CONTROL_NET application');
    c.control = opts.control as ControlSource;
  }
  if (opts.start_percent !== undefined) c.sigmaStart = schedule.percentToSigma(num(opts.start_percent, 'start_percent'));
  if (opts.end_percent !== undefined) c.sigmaEnd = schedule.percentToSigma(num(opts.end_percent, 'end_percent'));
  return c;
}

/** create_cond_with_same_area_if_none: an area entry gets a twin in the other list, with the context of that list's smallest entry holding the area. */
function addSameArea(conds: PreparedCond[], c: PreparedCond): void {
  if (!c.area) return;
  const inside = (a: readonly number[], b: readonly number[]) => a[2]! >= b[2]! && a[3]! >= b[3]! && a[0]! + a[2]! <= b[0]! + b[2]! && a[1]! + a[3]! <= b[1]! + b[3]!;
  let smallest: PreparedCond | undefined;
  for (const x of conds) {
    if (x.area) {
      if (!inside(c.area, x.area)) continue;
      if (!smallest || !smallest.area || smallest.area[0] * smallest.area[1] > x.area[0] * x.area[1]) smallest = x;
    } else if (!smallest) smallest = x;
  }
  if (!smallest) return;
  if (smallest.area && smallest.area.every((v, i) => v === c.area![i])) return;
  conds.push({ ...c, context: smallest.context });
}

type Entry = readonly [CondTensor, Record<string, unknown>];

/**
 * apply_empty_x_to_equal_area for `control`: the controls of positive entries
 * applied by the deprecated ControlNetApply (control_apply_to_uncond), none
 * with an area, go to the negative entries without an area (the i-th control
 * to entry i mod n, a later one replacing an earlier), unless a negative
 * entry has a control of its own.
 */
export function controlToUncond<E extends Entry>(positive: readonly E[], negative: readonly E[]): E[] {
  const has = (o: Record<string, unknown> | undefined, k: string) => o !== undefined && o !== null && o[k] !== undefined && o[k] !== null;
  const controls = positive.filter(([, o]) => o?.control_apply_to_uncond === true && !has(o, 'area') && has(o, 'control')).map(([, o]) => o.control);
  if (!controls.length) return [...negative];
  const plain = negative.map((e, i) => [e, i] as const).filter(([[, o]]) => !has(o, 'area'));
  if (plain.some(([[, o]]) => has(o, 'control')) || !plain.length) return [...negative];
  const out = [...negative];
  controls.forEach((control, x) => {
    const [[t, o], at] = plain[x % plain.length]!;
    out[at] = [t, { ...(o ?? {}), control }] as unknown as E;
  });
  return out;
}

/** process_conds for the positive and negative lists at a latent of h×w cells. */
export function prepareConds(
  positive: ReadonlyArray<readonly [CondTensor, Record<string, unknown>]>,
  negative: ReadonlyArray<readonly [CondTensor, Record<string, unknown>]>,
  h: number,
  w: number,
  schedule: DiscreteSchedule,
): [PreparedCond[], PreparedCond[]] {
  const pos = positive.map(([t, o]) => resolve(t, o ?? {}, h, w, schedule));
  const neg = negative.map(([t, o]) => resolve(t, o ?? {}, h, w, schedule));
  for (const c of [...pos]) addSameArea(neg, c);
  for (let i = 0; i < neg.length; i++) addSameArea(pos, neg[i]!);
  return [pos, neg];
}

/** What one entry contributes at this step: its region of the latent and the weight of each value there. */
interface Job {
  list: number;
  context: CondTensor;
  control?: ControlSource;
  /** [h, w, y, x], the whole latent when the entry has no area. */
  box: [number, number, number, number];
  mult: Float32Array;
}

/** get_area_and_mult: null when σ is outside the entry's range. */
function areaAndMult(c: PreparedCond, shape: readonly number[], sigma: number): Omit<Job, 'list'> | null {
  if (c.sigmaStart !== undefined && sigma > c.sigmaStart) return null;
  if (c.sigmaEnd !== undefined && sigma < c.sigmaEnd) return null;
  const [b, ch, H, W] = shape as [number, number, number, number];
  let box: [number, number, number, number] = [H, W, 0, 0];
  if (c.area) {
    const [ah, aw, ay, ax] = c.area;
    if (ay >= H || ax >= W) return { context: c.context, control: c.control, box: [0, 0, ay, ax], mult: new Float32Array(0) };
    box = [Math.min(H - ay, ah), Math.min(W - ax, aw), ay, ax];
  }
  const [bh, bw, by, bx] = box;
  const plane = bh * bw;
  const mult = new Float32Array(b * ch * plane);
  if (c.mask) {
    const { data, n } = c.mask;
    // The reference asserts this too: a mask is resized to the latent once, before sampling.
    if (data.length !== n * H * W) throw new ConditioningError(`a conditioning mask of ${data.length / n} values per plane does not fit a latent of ${H}×${W} (a sampler that changed the latent's size)`);
    const planes = Math.min(n, b);
    if (b % planes !== 0) throw new ConditioningError(`a conditioning mask of ${n} planes does not fit a batch of ${b}`);
    for (let i = 0; i < b; i++) {
      const src = (i % planes) * H * W;
      for (let y = 0; y < bh; y++)
        for (let x = 0; x < bw; x++) {
          const v = Math.fround(Math.fround(data[src + (y + by) * W + x + bx]! * c.maskStrength) * c.strength);
          for (let k = 0; k < ch; k++) mult[(i * ch + k) * plane + y * bw + x] = v;
        }
    }
  } else {
    mult.fill(c.strength);
    if (c.area) {
      // A fuzzy edge of up to 8 cells on each side that does not touch the latent's border.
      const dims: [number, number, number, number][] = [
        [bh, by, H, 0],
        [bw, bx, W, 1],
      ];
      for (const [size, offset, full, axis] of dims) {
        const rr = Math.min(8, Math.floor(size / 4));
        const scaleLine = (at: number, f: number) => {
          for (let i = 0; i < b * ch; i++)
            for (let j = 0; j < (axis === 0 ? bw : bh); j++) {
              const idx = i * plane + (axis === 0 ? at * bw + j : j * bw + at);
              mult[idx] = Math.fround(mult[idx]! * f);
            }
        };
        if (offset !== 0) for (let t = 0; t < rr; t++) scaleLine(t, Math.fround((1 / rr) * (t + 1)));
        if (size + offset < full) for (let t = 0; t < rr; t++) scaleLine(size - 1 - t, Math.fround((1 / rr) * (t + 1)));
      }
    }
  }
  return { context: c.context, control: c.control, box, mult };
}

/** The denoised prediction of a batch: x [n, C, h, w] (unscaled model input), σ, context [n, T, D]. */
export type BatchModel = (x: Float32Array, shape: number[], sigma: number, context: CondTensor) => Promise<Float32Array>;

function repeatContext(c: CondTensor, b: number): CondTensor {
  const [n, t, d] = c.shape as [number, number, number];
  if (n === b) return c;
  if (b % n !== 0 && n !== 1) throw new ConditioningError(`a conditioning batch of ${n} does not fit a latent batch of ${b}`);
  const per = t * d;
  const data = new Float32Array(b * per);
  for (let i = 0; i < b; i++) data.set(c.data.subarray((i % n) * per, ((i % n) + 1) * per), i * per);
  return { shape: [b, t, d], data };
}

/**
 * calc_cond_batch: the prediction for each list (null lists are skipped and
 * give zeros), each the mult-weighted average of its entries' predictions.
 * `maxBatch` caps how many latent values go through the model in one call.
 */
export async function calcCondBatch(model: BatchModel, lists: Array<PreparedCond[] | null>, x: Float32Array, shape: readonly number[], sigma: number, maxBatchValues = 2 * x.length): Promise<Float32Array[]> {
  const [b, ch, H, W] = shape as [number, number, number, number];
  const n = x.length;
  const outs = lists.map(() => new Float32Array(n));
  const counts = lists.map(() => new Float32Array(n).fill(1e-37));
  const jobs: Job[] = [];
  lists.forEach((list, li) => {
    for (const c of list ?? []) {
      const j = areaAndMult(c, shape, sigma);
      if (j && j.box[0] > 0 && j.box[1] > 0) jobs.push({ ...j, list: li });
    }
  });
  while (jobs.length) {
    const first = jobs[0]!;
    const same = (j: Job) =>
      j.box[0] === first.box[0] && j.box[1] === first.box[1] && j.context.shape[1] === first.context.shape[1] && j.context.shape[2] === first.context.shape[2] && j.context.y?.length === first.context.y?.length && j.context.concat?.length === first.context.concat?.length && j.control === first.control;
    const [bh, bw] = first.box;
    const per = b * ch * bh * bw;
    const limit = Math.max(1, Math.floor(maxBatchValues / per));
    const group: Job[] = [];
    for (let i = 0; i < jobs.length && group.length < limit; ) {
      if (same(jobs[i]!)) group.push(jobs.splice(i, 1)[0]!);
      else i++;
    }
    const xin = new Float32Array(group.length * per);
    const [T, D] = [first.context.shape[1]!, first.context.shape[2]!];
    const ctx = new Float32Array(group.length * b * T * D);
    // One adm row per entry, repeated over the latent batch.
    const yw = first.context.y?.length ?? 0;
    const ys = yw ? new Float32Array(group.length * b * yw) : undefined;
    // Inpainting UNets' extra channels ([B, k, H, W] per entry): cropped to the box like x (the reference's CONDNoiseShape).
    const kc = first.context.concat ? first.context.concat.length / (b * H * W) : 0;
    const cs = kc ? new Float32Array(group.length * b * kc * bh * bw) : undefined;
    group.forEach((j, gi) => {
      const [, , by, bx] = j.box;
      for (let i = 0; i < b * ch; i++)
        for (let y = 0; y < bh; y++) {
          const src = (i * H + y + by) * W + bx;
          xin.set(x.subarray(src, src + bw), gi * per + (i * bh + y) * bw);
        }
      ctx.set(repeatContext(j.context, b).data, gi * b * T * D);
      if (ys) for (let i = 0; i < b; i++) ys.set(j.context.y!, (gi * b + i) * yw);
      if (cs)
        for (let i = 0; i < b * kc; i++)
          for (let y = 0; y < bh; y++) {
            const src = (i * H + y + by) * W + bx;
            cs.set(j.context.concat!.subarray(src, src + bw), gi * b * kc * bh * bw + (i * bh + y) * bw);
          }
    });
    const control = first.control ? { control: first.control, batched: group.length } : {};
    const out = await model(xin, [group.length * b, ch, bh, bw], sigma, { shape: [group.length * b, T, D], data: ctx, ...(ys ? { y: ys } : {}), ...(cs ? { concat: cs } : {}), ...control });
    group.forEach((j, gi) => {
      const [, , by, bx] = j.box;
      const o = outs[j.list]!;
      const cnt = counts[j.list]!;
      for (let i = 0; i < b * ch; i++)
        for (let y = 0; y < bh; y++)
          for (let xx = 0; xx < bw; xx++) {
            const at = (i * H + y + by) * W + xx + bx;
            const k = (i * bh + y) * bw + xx;
            const m = j.mult[k]!;
            o[at] = o[at]! + Math.fround(out[gi * per + k]! * m);
            cnt[at] = cnt[at]! + m;
          }
    });
  }
  for (let li = 0; li < outs.length; li++) {
    const o = outs[li]!;
    const cnt = counts[li]!;
    for (let i = 0; i < n; i++) o[i] = o[i]! / cnt[i]!;
  }
  return outs;
}
