// Values that wrap another: a string marked safe, and an iterator that can be taken once.
// A leaf module, so that the render state can size them without importing values.ts.

/** A string that is "safe" (markupsafe.Markup). Only matters for escape/forceescape/striptags and `+`. */
export class Markup {
  constructor(readonly s: string) {}
  toString(): string {
    return this.s;
  }
}

/** Lazy, once-only iterators (reversed(), map(), select(), ...) render as Python iterator objects. */
export class PyIterator {
  consumed = false;
  constructor(
    readonly items: unknown[],
    readonly typeName: string,
  ) {}
  take(): unknown[] {
    if (this.consumed) return [];
    this.consumed = true;
    return this.items;
  }
}
