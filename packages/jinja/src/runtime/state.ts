// Per-render mutable state: output buffer and the budgets that bound a render.

import { LimitExceededError } from '../errors.js';

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
}

export const DEFAULT_LIMITS: Limits = {
  fuel: 5_000_000,
  maxLoopIterations: 1_000_000,
  maxRange: 100_000,
  maxRecursionDepth: 100,
  maxOutputSize: 10_000_000,
  timeoutMs: 1_000,
};

const CLOCK_EVERY = 4096;
const NO_GLOBALS: Map<string, unknown> = new Map();

export class RenderState {
  out = '';
  /** Characters written so far, including captured output (set blocks, macros). */
  written = 0;
  fuel: number;
  loopsLeft: number;
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

  enter(): void {
    if (++this.depth > this.limits.maxRecursionDepth)
      throw new LimitExceededError('recursion', `maximum recursion depth exceeded (${this.limits.maxRecursionDepth})`);
  }
  leave(): void {
    this.depth--;
  }
}
