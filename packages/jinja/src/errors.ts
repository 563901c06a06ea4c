// Error classes mirror Jinja2's hierarchy so hosts can catch them the same way:
// every failure at render time is a TemplateRuntimeError (or a subclass).

export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Raised by `fromString` for malformed templates, unknown filters/tests and unknown tags. */
export class TemplateSyntaxError extends TemplateError {
  lineno: number;
  constructor(message: string, lineno: number) {
    super(message);
    this.lineno = lineno;
  }
  override toString(): string {
    return `${this.name}: ${this.message} (line ${this.lineno})`;
  }
}

/** Any error raised while rendering (Python TypeError/ValueError/ZeroDivisionError map here too). */
export class TemplateRuntimeError extends TemplateError {}

/** Use of an undefined value beyond rendering/iterating/testing it. */
export class UndefinedError extends TemplateRuntimeError {}

/** The sandbox refused an attribute or callable. */
export class SecurityError extends TemplateRuntimeError {}

export type LimitKind = 'fuel' | 'loop' | 'output' | 'recursion' | 'range' | 'size' | 'time' | 'memory';

/** A configured bound was hit (Python raises OverflowError/RecursionError/MemoryError here). */
export class LimitExceededError extends TemplateRuntimeError {
  kind: LimitKind;
  constructor(kind: LimitKind, message: string) {
    super(message);
    this.kind = kind;
  }
}

/** Python's TypeError etc. surface as TemplateRuntimeError; keep the Python class name in the message. */
export function pyError(pyClass: string, message: string): TemplateRuntimeError {
  const e = new TemplateRuntimeError(message);
  (e as { pyClass?: string }).pyClass = pyClass;
  return e;
}
