// @svc/jinja — a sandboxed, bounded Jinja2 (3.1) engine. See README.md.

export { Environment, Template, type EnvironmentOptions, type HostFilter, type HostTest } from './environment.js';
export {
  TemplateError,
  TemplateSyntaxError,
  TemplateRuntimeError,
  UndefinedError,
  SecurityError,
  LimitExceededError,
  type LimitKind,
} from './errors.js';
export { parseJsonPreservingFloats, JsonParseError } from './json.js';
export { DEFAULT_LIMITS, type Limits } from './runtime/state.js';
export { PyFloat, Markup, Undefined, Kwargs, markTuple, isTuple, PyObject, NativeFunction, MISSING, type KwMap } from './runtime/values.js';
export { pyStr, pyRepr } from './runtime/repr.js';
export { RenderPool, defaultPoolSize, type RenderPoolOptions, type RenderJob, type RenderResult, type RenderError, type SetupModule } from './pool.js';
