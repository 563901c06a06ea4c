// Attribute (`.`) and item (`[]`) lookup as Jinja2's SandboxedEnvironment does it.
//
// Guarantees: a template only ever sees (a) own data of plain objects/Maps/arrays/strings
// handed in by the host, (b) the Python methods listed in runtime/methods.ts, (c) the
// attributes engine objects expose through PyObject.pyGetAttr. JavaScript properties
// (`constructor`, `__proto__`, prototype methods, functions' properties) are never read:
// there is no code path doing `obj[name]` with a template-supplied name except on
// own properties checked with Object.hasOwn.

import { intOf, strIndex } from './runtime/ops.js';
import { Macro, PyRange } from './runtime/objects.js';
import {
  DICT_METHODS,
  FLOAT_METHODS,
  INT_METHODS,
  LIST_METHODS,
  SEQ_METHODS,
  STR_METHODS,
  numberAttr,
  setFieldAccess,
  type Method,
} from './runtime/methods.js';
import {
  BoundMethod,
  DictView,
  GROUP_TUPLE,
  Markup,
  MISSING,
  NativeFunction,
  PyCallable,
  PyFloat,
  PyObject,
  Undefined,
  dictGet,
  isPlainObject,
  isTuple,
  typeName,
} from './runtime/values.js';

export const UNSAFE: unique symbol = Symbol('unsafe');

const words = (s: string) => s.trim().split(/\s+/);
const OBJ_DUNDERS = words(`__class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ __getstate__
  __gt__ __hash__ __init__ __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__
  __setattr__ __sizeof__ __str__ __subclasshook__`);
const DATA_DUNDERS = words(`__add__ __contains__ __getitem__ __iter__ __len__ __mul__ __rmul__ __class_getitem__
  __getnewargs__ __mod__ __rmod__ __iadd__ __imul__ __setitem__ __delitem__ __reversed__ __or__ __ror__ __ior__
  __abs__ __and__ __bool__ __ceil__ __divmod__ __float__ __floor__ __floordiv__ __index__ __int__ __invert__
  __lshift__ __neg__ __pos__ __pow__ __radd__ __rand__ __rdivmod__ __rfloordiv__ __rlshift__ __round__ __rpow__
  __rrshift__ __rshift__ __rsub__ __rtruediv__ __rxor__ __sub__ __truediv__ __trunc__ __xor__`);
const CALLABLE_DUNDERS = words(`__call__ __name__ __qualname__ __module__ __globals__ __code__ __closure__ __defaults__
  __kwdefaults__ __dict__ __annotations__ __get__ __self__ __func__ __wrapped__ __text_signature__ __builtins__
  __weakref__ __mro__ __subclasses__ __bases__ __base__ __instancecheck__ __subclasscheck__ __prepare__
  __basicsize__ __dictoffset__ __flags__ __itemsize__ __weakrefoffset__ __abstractmethods__ __iter__ __len__
  __next__ __getattr__`);

const DATA_SET = new Set([...OBJ_DUNDERS, ...DATA_DUNDERS]);
const CALLABLE_SET = new Set([...OBJ_DUNDERS, ...CALLABLE_DUNDERS]);
const UNDEFINED_SET = new Set([...OBJ_DUNDERS, ...DATA_DUNDERS, '__getattr__', '__call__', '__slots__', '__module__']);

/** Does a Python object of this kind have the (underscore) attribute? Used to pick SecurityError vs Undefined. */
function hasUnderscoreAttr(obj: unknown, name: string): boolean {
  if (typeof obj === 'function' || obj instanceof PyCallable || obj instanceof PyObject) return CALLABLE_SET.has(name);
  return DATA_SET.has(name);
}

function bind(obj: unknown, name: string, table: Map<string, Method>): unknown {
  const m = table.get(name);
  return m ? new BoundMethod(obj, name, m) : MISSING;
}

/** Python attribute of a value (methods/properties), MISSING, or UNSAFE. */
export function pyAttr(obj: unknown, name: string): unknown {
  if (name.charCodeAt(0) === 95 /* _ */) return hasUnderscoreAttr(obj, name) ? UNSAFE : MISSING;
  switch (typeof obj) {
    case 'string':
      return bind(obj, name, STR_METHODS);
    case 'number':
    case 'boolean':
    case 'bigint': {
      const isF = typeof obj === 'number' && !Number.isInteger(obj);
      const a = numberAttr(obj, name);
      if (a !== MISSING) return a;
      return bind(obj, name, isF ? FLOAT_METHODS : INT_METHODS);
    }
    case 'function':
      return MISSING;
  }
  if (obj === null || obj === undefined) return MISSING;
  if (Array.isArray(obj)) {
    if ((obj as unknown as Record<symbol, unknown>)[GROUP_TUPLE] === true) {
      if (name === 'grouper') return obj[0];
      if (name === 'list') return obj[1];
    }
    const m = SEQ_METHODS.get(name) ?? (isTuple(obj) ? undefined : LIST_METHODS.get(name));
    return m ? new BoundMethod(obj, name, m) : MISSING;
  }
  if (obj instanceof Map || isPlainObject(obj)) return bind(obj, name, DICT_METHODS);
  if (obj instanceof Markup) return bind(obj, name, STR_METHODS);
  if (obj instanceof PyFloat) {
    const a = numberAttr(obj, name);
    return a !== MISSING ? a : bind(obj, name, FLOAT_METHODS);
  }
  if (obj instanceof PyObject) return obj.pyGetAttr(name);
  if (obj instanceof Macro) return obj.pyGetAttrMacro(name);
  if (obj instanceof NativeFunction && obj.typeName === 'type' && name === 'mro') return UNSAFE;
  return MISSING;
}

/** obj[key] for data values; MISSING when Python would raise (KeyError/IndexError/TypeError). */
export function itemLookup(obj: unknown, key: unknown): unknown {
  if (Array.isArray(obj)) {
    const i = intOf(key);
    if (i === null) return MISSING;
    let n = Number(i);
    if (n < 0) n += obj.length;
    if (n < 0 || n >= obj.length) return MISSING;
    const v = obj[n];
    return v === undefined ? null : v;
  }
  if (obj instanceof Map || isPlainObject(obj)) {
    try {
      return dictGet(obj, key);
    } catch {
      return MISSING; // unhashable key: TypeError, swallowed like the sandbox does
    }
  }
  if (obj instanceof PyRange) {
    const i = intOf(key);
    if (i === null) return MISSING;
    let n = Number(i);
    if (n < 0) n += obj.length;
    return n >= 0 && n < obj.length ? obj.start + n * obj.step : MISSING;
  }
  if (typeof obj === 'string' || obj instanceof Markup) {
    const i = intOf(key);
    if (i === null) return MISSING;
    return strIndex(typeof obj === 'string' ? obj : obj.s, Number(i));
  }
  return MISSING;
}

function unsafeUndefined(obj: unknown, name: string): Undefined {
  return new Undefined(name, obj, `access to attribute '${name}' of '${typeName(obj)}' object is unsafe.`, true);
}

/** `obj.name` — attribute first, then item. */
export function getattr(obj: unknown, name: string): unknown {
  if (obj instanceof Undefined) {
    if (UNDEFINED_SET.has(name)) return unsafeUndefined(obj, name);
    obj.fail();
  }
  // hot path: plain data dicts with a string key that is not a dict method name
  if (isPlainObject(obj) && Object.hasOwn(obj, name) && !DICT_METHODS.has(name)) {
    const v = obj[name];
    return v === undefined ? null : v;
  }
  const a = pyAttr(obj, name);
  if (a === UNSAFE) return unsafeUndefined(obj, name);
  if (a !== MISSING) return a;
  const v = itemLookup(obj, name);
  if (v !== MISSING) return v;
  return new Undefined(name, obj);
}

/** `obj[key]` — item first, then attribute for string keys. */
export function getitem(obj: unknown, key: unknown): unknown {
  if (obj instanceof Undefined) obj.fail();
  const v = itemLookup(obj, key);
  if (v !== MISSING) return v;
  if (typeof key === 'string') {
    const a = pyAttr(obj, key);
    if (a === UNSAFE) return unsafeUndefined(obj, key);
    if (a !== MISSING) return a;
  }
  return new Undefined(key, obj);
}

setFieldAccess({ getattr, getitem });

export { DictView };
