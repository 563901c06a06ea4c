// Per-render mutable state: output buffer and the budgets that bound a render.

import { LimitExceededError } from '../errors.js';
import { Markup, PyIterator } from './wrappers.js';

export interface Limits {
  /** Total abstract steps (loop iterations, calls, filter work per element). */
  fuel: number;
  /** Total loop iterations across the render. */
  maxLoopIterations: number;
  /** Largest range() (Jinja2's sandbox MAX_RANGE). */
  maxRange: number;
  /** Nested macro calls / recursive loop levels. */
  maxRecursionDepth: number;
  /** Characters of output, also the largest string a template may build. */
  maxOutputSize: number;
  /** Wall-clock budget in milliseconds, checked every few thousand steps. */
  timeoutMs: number;
  /**
   * Memory a render may allocate, in bytes as counted here: a character of a string the template
   * builds counts 1, an item of a list it builds or grows 8, a dict entry 16. Counted as it grows
   * (never given back), so a loop that keeps building big values runs out even if each fits.
   */
  maxMemory: number;
}

export const DEFAULT_LIMITS: Limits = {
  fuel: 5_000_000,
  maxLoopIterations: 1_000_000,
  maxRange: 100_000,
  maxRecursionDepth: 100,
  maxOutputSize: 10_000_000,
  timeoutMs: 1_000,
  maxMemory: 32_000_000,
};

/** Size of a value in the units of `maxMemory` (0 for scalars and host objects). */
export function sizeOf(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (typeof v !== 'object' || v === null) return 0;
  if (Array.isArray(v)) return v.length * 8;
  if (v instanceof Markup) return v.s.length;
  if (v instanceof Map) return v.size * 16;
  if (v instanceof PyIterator) return v.items.length * 8;
  return 0;
}

const CLOCK_EVERY = 4096;
const NO_GLOBALS: Map<string, unknown> = new Map();

export class RenderState {
  out = '';
  /** Characters written so far, including captured output (set blocks, macros). */
  written = 0;
  fuel: number;
  loopsLeft: number;
  /** Remaining memory budget (see Limits.maxMemory). */
  memLeft: number;
  depth = 0;
  /** Render context (host data): plain object or Map. */
  ctx: Record<string, unknown> | Map<string, unknown> | null = null;
  globals: Map<string, unknown> = NO_GLOBALS;
  autoescape = false;
  private clock = CLOCK_EVERY;
  private deadline: number;

  constructor(
    readonly limits: Limits,
    readonly env: unknown,
  ) {
    this.fuel = limits.fuel;
    this.loopsLeft = limits.maxLoopIterations;
    this.memLeft = limits.maxMemory;
    this.deadline = Date.now() + limits.timeoutMs;
  }

  /** Charge `n` steps; every few thousand steps also check the wall clock. */
  tick(n = 1): void {
    this.fuel -= n;
    if (this.fuel < 0) throw new LimitExceededError('fuel', `template exceeded its step budget (${this.limits.fuel} steps)`);
    this.clock -= n;
    if (this.clock <= 0) {
      this.clock = CLOCK_EVERY;
      if (Date.now() > this.deadline) throw new LimitExceededError('time', `template exceeded its time budget (${this.limits.timeoutMs} ms)`);
    }
  }

  loopTick(): void {
    if (--this.loopsLeft < 0)
      throw new LimitExceededError('loop', `template exceeded the loop iteration limit (${this.limits.maxLoopIterations})`);
    this.tick(1);
  }

  write(s: string): void {
    this.written += s.length;
    if (this.written > this.limits.maxOutputSize) this.outputExceeded();
    this.out += s;
  }

  outputExceeded(): never {
    throw new LimitExceededError('output', `template output exceeded ${this.limits.maxOutputSize} characters`);
  }

  /** Strings/lists a template builds are bounded by the output size too (blocks 'a'*10**9). */
  checkSize(n: number): void {
    if (n > this.limits.maxOutputSize)
      throw new LimitExceededError('size', `value of ${n} items/characters exceeds the limit of ${this.limits.maxOutputSize}`);
    // building a big value is work: charge proportionally
    if (n > 1024) this.tick(n >>> 10);
  }

  /**
   * Work a filter or method is about to do on `n` characters, charged before it starts so a
   * single call on a big string cannot run past the budgets: `nsPerChar` is its measured cost
   * (docs: one step of fuel is about 200 ns, so the default fuel is about one second).
   */
  cost(n: number, nsPerChar: number): void {
    const steps = Math.ceil((n * nsPerChar) / 200);
    if (steps > 0) this.tick(steps);
  }

  /** A template grew memory by `n` units (characters; 8 per list item). */
  grow(n: number): void {
    this.memLeft -= n;
    if (this.memLeft < 0)
      throw new LimitExceededError('memory', `template exceeded its memory budget (${this.limits.maxMemory} bytes allocated)`);
  }

  /**
   * Before a filter or method runs: it may touch all of its input, so charge steps by the input's
   * size (keeps the clock checked while big values are processed in a loop).
   */
  work(input: unknown): void {
    const n = typeof input === 'string' ? input.length >>> 6 : sizeOf(input) >>> 5;
    if (n > 0) this.tick(n);
  }

  /** After a filter or method: a new string/list/dict it returned is memory the template grew. */
  made(input: unknown, out: unknown): unknown {
    if (out !== input && typeof out !== 'number' && typeof out !== 'boolean') {
      const n = sizeOf(out);
      if (n > 0) this.grow(n);
    }
    return out;
  }

  enter(): void {
    if (++this.depth > this.limits.maxRecursionDepth)
      throw new LimitExceededError('recursion', `maximum recursion depth exceeded (${this.limits.maxRecursionDepth})`);
  }
  leave(): void {
    this.depth--;
  }
}
