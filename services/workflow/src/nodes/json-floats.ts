/**
 * JSON has one number type; the reference's Python client and server have two,
 * and nodes tell them apart (`isinstance(v, float)`: the literal `5` is an int,
 * `5.0` a float). JSON.parse gives both as the number 5, so a prompt's text is
 * scanned for integral numbers written as floats (`5.0`, `5e0`, `1E2`) and the
 * places that hold them are remembered beside the parsed value (a WeakMap:
 * nothing is added to the values themselves). A node reads the distinction
 * with `pyTypeOf(inputs, name)`; validation carries it into the inputs its
 * VALIDATE_INPUTS receives.
 */

const floatKeys = new WeakMap<object, Set<string>>();

/** Whether `container[key]` is a number that was written as a float literal (or is not integral). */
export function isFloatLiteral(container: object, key: string | number): boolean {
  const v = (container as Record<string, unknown>)[key];
  if (typeof v !== 'number') return false;
  if (!Number.isInteger(v)) return true;
  return floatKeys.get(container)?.has(String(key)) === true;
}

/** Python's type name of `container[key]` as the reference would have parsed it: int and float apart. */
export function pyTypeOf(container: object, key: string | number): string {
  const v = Object.hasOwn(container, key) ? (container as Record<string, unknown>)[key] : undefined;
  if (v === null || v === undefined) return 'NoneType';
  if (typeof v === 'number') return isFloatLiteral(container, key) ? 'float' : 'int';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

/** Marks `to[toKey]` as holding a float literal when `from[fromKey]` does (a value copied into another object). */
export function carryFloatMark(from: object, fromKey: string | number, to: object, toKey: string | number = fromKey): void {
  if (floatKeys.get(from)?.has(String(fromKey))) markFloat(to, toKey);
}

/** Records what a conversion made of `container[key]`: `float(v)` is a float, `int(v)` an int. */
export function setFloatMark(container: object, key: string | number, float: boolean): void {
  if (float) markFloat(container, key);
  else floatKeys.get(container)?.delete(String(key));
}

function markFloat(container: object, key: string | number): void {
  let set = floatKeys.get(container);
  if (!set) floatKeys.set(container, (set = new Set()));
  set.add(String(key));
}

/**
 * Where a number written as a float can be integral, so that the scan below has something to mark: a fraction of
 * zeros (`5.0`), an exponent (`1.5e1`), or 16 digits or more, which a double can round to an integer (`2.9999999999999999`,
 * `4503599627370496.5`); with at most 15 significant digits a fraction that is not zero stays off every integer by more
 * than half a unit in the last place. Anything else (`0.5`, `1.25`: what JavaScript clients send) needs no mark, as
 * JSON.parse's value is already not an integer; then the text is not scanned at all. Text inside strings may match too:
 * that only costs the scan.
 */
const INTEGRAL_FLOAT_CANDIDATE = /[0-9]\.0*(?![0-9])|[0-9][eE]|(?:[0-9]\.?){16}/;

/**
 * Scans JSON `text` (already parsed into `value` by JSON.parse) and marks
 * every integral number written as a float. Linear, without recursion; a
 * duplicate key counts as JSON.parse counts it (the last one).
 */
export function markFloatLiterals(value: unknown, text: string): void {
  if (!INTEGRAL_FLOAT_CANDIDATE.test(text)) return;
  type Frame = { obj: boolean; key: string; index: number; expectKey: boolean };
  const stack: Frame[] = [];
  const marks = new Map<string, string[]>();
  const pathOf = (): string[] => stack.map((f) => (f.obj ? f.key : String(f.index)));
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      stack.push({ obj: c === 0x7b, key: '', index: 0, expectKey: c === 0x7b });
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      i++;
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top) {
        if (top.obj) top.expectKey = true;
        else top.index++;
      }
      i++;
    } else if (c === 0x3a /* : */) {
      const top = stack[stack.length - 1];
      if (top) top.expectKey = false;
      i++;
    } else if (c === 0x22 /* " */) {
      let j = i + 1;
      let escaped = false;
      for (; j < n; j++) {
        const d = text.charCodeAt(j);
        if (d === 0x5c) {
          escaped = true;
          j++;
        } else if (d === 0x22) break;
      }
      const top = stack[stack.length - 1];
      if (top?.obj && top.expectKey) top.key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j);
      i = j + 1;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      let floaty = false;
      for (; j < n; j++) {
        const d = text.charCodeAt(j);
        if (d === 0x2e || d === 0x65 || d === 0x45) floaty = true;
        else if (!(d === 0x2b || d === 0x2d || (d >= 0x30 && d <= 0x39))) break;
      }
      if (stack.length > 0 && (floaty || marks.size > 0)) {
        const path = pathOf();
        const id = path.join('\u0000');
        if (floaty && Number.isInteger(Number(text.slice(i, j)))) marks.set(id, path);
        else marks.delete(id);
      }
      i = j;
    } else i++;
  }
  for (const path of marks.values()) {
    let parent: unknown = value;
    for (let k = 0; k < path.length - 1 && parent !== null && typeof parent === 'object'; k++) parent = Object.hasOwn(parent, path[k]!) ? (parent as Record<string, unknown>)[path[k]!] : undefined;
    const last = path[path.length - 1]!;
    if (parent !== null && typeof parent === 'object' && typeof (parent as Record<string, unknown>)[last] === 'number') markFloat(parent, last);
  }
}
