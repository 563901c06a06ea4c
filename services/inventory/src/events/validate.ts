/** DRF-style field validation helpers shared by the webhook and event-rule models. */

export type Errors = Record<string, string[]>;

export class ValidationFailed extends Error {
  constructor(readonly errors: Errors) {
    super('validation failed');
  }
}

export class Fields {
  errors: Errors = {};
  constructor(
    readonly input: Record<string, unknown>,
    readonly partial: boolean,
  ) {}

  add(field: string, message: string): void {
    (this.errors[field] ??= []).push(message);
  }

  has(field: string): boolean {
    return Object.hasOwn(this.input, field);
  }

  /** A string field; undefined when absent (and not required). */
  str(field: string, o: { required?: boolean; max?: number; blank?: boolean; nullable?: boolean } = {}): string | null | undefined {
    if (!this.has(field)) {
      if (o.required && !this.partial) this.add(field, 'This field is required.');
      return undefined;
    }
    const v = this.input[field];
    if (v === null) {
      if (o.nullable) return null;
      this.add(field, 'This field may not be null.');
      return undefined;
    }
    if (typeof v !== 'string' && typeof v !== 'number') {
      this.add(field, 'Not a valid string.');
      return undefined;
    }
    const s = String(v);
    if (s.trim() === '' && !o.blank && !o.nullable) {
      this.add(field, 'This field may not be blank.');
      return undefined;
    }
    if (o.max !== undefined && s.length > o.max) {
      this.add(field, `Ensure this field has no more than ${o.max} characters.`);
      return undefined;
    }
    return o.nullable && s === '' ? null : s;
  }

  bool(field: string): boolean | undefined {
    if (!this.has(field)) return undefined;
    const v = this.input[field];
    if (typeof v === 'boolean') return v;
    if (v === 'true' || v === 'True' || v === 1 || v === '1') return true;
    if (v === 'false' || v === 'False' || v === 0 || v === '0') return false;
    this.add(field, 'Must be a valid boolean.');
    return undefined;
  }

  int(field: string, o: { min?: number; max?: number; nullable?: boolean; required?: boolean } = {}): number | null | undefined {
    if (!this.has(field)) {
      if (o.required && !this.partial) this.add(field, 'This field is required.');
      return undefined;
    }
    const v = this.input[field];
    if (v === null || v === '') {
      if (o.nullable) return null;
      this.add(field, 'This field may not be null.');
      return undefined;
    }
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isInteger(n)) {
      this.add(field, 'A valid integer is required.');
      return undefined;
    }
    if (o.min !== undefined && n < o.min) {
      this.add(field, `Ensure this value is greater than or equal to ${o.min}.`);
      return undefined;
    }
    if (o.max !== undefined && n > o.max) {
      this.add(field, `Ensure this value is less than or equal to ${o.max}.`);
      return undefined;
    }
    return n;
  }

  choice<T extends string>(field: string, choices: readonly T[]): T | undefined {
    if (!this.has(field)) return undefined;
    const v = this.input[field];
    const raw = typeof v === 'object' && v !== null && 'value' in v ? (v as { value: unknown }).value : v;
    if (typeof raw !== 'string' || !choices.includes(raw as T)) {
      this.add(field, `"${typeof raw === 'string' ? raw : JSON.stringify(raw)}" is not a valid choice.`);
      return undefined;
    }
    return raw as T;
  }

  object(field: string, o: { nullable?: boolean } = {}): Record<string, unknown> | null | undefined {
    if (!this.has(field)) return undefined;
    const v = this.input[field];
    if (v === null && o.nullable) return null;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      this.add(field, 'Value must be a dictionary (JSON object).');
      return undefined;
    }
    return v as Record<string, unknown>;
  }

  /** A list of strings from a fixed vocabulary. */
  stringList(field: string, allowed: readonly string[] | undefined, o: { required?: boolean } = {}): string[] | undefined {
    if (!this.has(field)) {
      if (o.required && !this.partial) this.add(field, 'This field is required.');
      return undefined;
    }
    const v = this.input[field];
    if (!Array.isArray(v)) {
      this.add(field, `Expected a list of items but got type "${v === null ? 'NoneType' : typeof v}".`);
      return undefined;
    }
    if (v.length === 0 && o.required) {
      this.add(field, 'This list may not be empty.');
      return undefined;
    }
    const out: string[] = [];
    for (const item of v) {
      if (typeof item !== 'string' || (allowed && !allowed.includes(item))) {
        this.add(field, `"${typeof item === 'string' ? item.slice(0, 100) : JSON.stringify(item)}" is not a valid choice.`);
        return undefined;
      }
      if (!out.includes(item)) out.push(item);
    }
    return out;
  }

  throwIfAny(): void {
    if (Object.keys(this.errors).length) throw new ValidationFailed(this.errors);
  }
}
