// Django's related managers and query sets as config templates see them (`device.interfaces.all()`), built inside a
// render worker from data the API loaded beforehand (models/related-managers.ts): the objects are plain REST
// representations, the managers and query sets engine objects whose attributes are only the methods below, so the
// sandbox's guarantees hold (no host code or property is reachable).

import { MISSING, NativeFunction, PyObject, type KwMap } from '@svc/jinja';

/** Where the API puts the related objects: `{<context key>: {<relation>: {model, items}}}`. */
export const RELATED_KEY = '__related__';

type Item = Record<string, unknown>;

const valueOf = (v: unknown): unknown => (v && typeof v === 'object' && !Array.isArray(v) ? ((v as Item).value ?? (v as Item).id ?? v) : v);

/** Django's `field=value` / `field__in=[…]` / `field__icontains=` lookups over the representations (choices by value, related objects by id). */
function matches(item: Item, kw: KwMap): boolean {
  if (!kw) return true;
  for (const [key, want] of kw) {
    const [field, lookup = 'exact'] = key.split('__', 2) as [string, string?];
    const have = field === 'pk' ? item.id : valueOf(item[field] === undefined && field.endsWith('_id') ? item[field.slice(0, -3)] : item[field]);
    switch (lookup) {
      case 'exact':
        if (have !== valueOf(want)) return false;
        break;
      case 'in':
        if (!Array.isArray(want) || !want.map(valueOf).includes(have)) return false;
        break;
      case 'icontains':
        if (typeof have !== 'string' || typeof want !== 'string' || !have.toLowerCase().includes(want.toLowerCase())) return false;
        break;
      case 'isnull':
        if ((have === null || have === undefined) !== !!want) return false;
        break;
      default:
        throw new Error(`Unsupported lookup '${lookup}' for field '${field}'.`);
    }
  }
  return true;
}

function orderBy(items: Item[], fields: unknown[]): Item[] {
  const keys = fields.map((f) => String(f));
  return [...items].sort((a, b) => {
    for (const k of keys) {
      const desc = k.startsWith('-');
      const name = desc ? k.slice(1) : k;
      const x = valueOf(a[name]) as any;
      const y = valueOf(b[name]) as any;
      if (x === y) continue;
      const c = x === null || x === undefined ? -1 : y === null || y === undefined ? 1 : x < y ? -1 : 1;
      return desc ? -c : c;
    }
    return 0;
  });
}

/** The methods Django's managers and query sets share (read-only ones). */
function method(self: { items: Item[]; label: string; truncated?: number }, name: string): unknown {
  const fn = (body: (args: unknown[], kw: KwMap) => unknown) =>
    new NativeFunction(
      name,
      (_r, args, kw) => {
        if (self.truncated) throw new Error(`Too many related ${self.label} objects: a template may load at most ${self.truncated} related objects in all.`);
        return body(args, kw);
      },
      'method',
    );
  switch (name) {
    case 'all':
      return fn(() => new QuerySet(self.label, self.items));
    case 'count':
      return fn(() => self.items.length);
    case 'exists':
      return fn(() => self.items.length > 0);
    case 'first':
      return fn(() => self.items[0] ?? null);
    case 'last':
      return fn(() => self.items[self.items.length - 1] ?? null);
    case 'filter':
      return fn((_a, kw) => new QuerySet(self.label, self.items.filter((i) => matches(i, kw))));
    case 'exclude':
      return fn((_a, kw) => new QuerySet(self.label, self.items.filter((i) => !matches(i, kw))));
    case 'get':
      return fn((_a, kw) => {
        const found = self.items.filter((i) => matches(i, kw));
        if (found.length !== 1) throw new Error(found.length ? `get() returned more than one ${self.label} -- it returned ${found.length}!` : `${self.label} matching query does not exist.`);
        return found[0];
      });
    case 'order_by':
      return fn((args) => new QuerySet(self.label, orderBy(self.items, args)));
    default:
      return MISSING;
  }
}

/** `device.interfaces`: not iterable itself (as Django's RelatedManager); `.all()` and the other methods give query sets. */
export class RelatedManager extends PyObject {
  readonly pyTypeName = 'RelatedManager';
  constructor(
    readonly label: string,
    readonly items: Item[],
    readonly truncated?: number,
  ) {
    super();
  }
  override pyGetAttr(name: string): unknown {
    return method(this, name);
  }
  override pyRepr(): string {
    return `${this.label}.None`;
  }
}

/** A query set: iterable, with a length, and the same methods. */
export class QuerySet extends PyObject {
  readonly pyTypeName = 'QuerySet';
  constructor(
    readonly label: string,
    readonly items: Item[],
  ) {
    super();
  }
  override pyGetAttr(name: string): unknown {
    return method(this, name);
  }
  override pyIter(): unknown[] {
    return this.items;
  }
  override pyLen(): number {
    return this.items.length;
  }
  override pyRepr(): string {
    const shown = this.items.slice(0, 20).map((i) => `<${this.label}: ${String(i.display ?? i.id)}>`);
    return `<QuerySet [${shown.join(', ')}${this.items.length > 20 ? ', ...(remaining elements truncated)...' : ''}]>`;
  }
}

/** The key an object is known by in the related table: `<app>/<path>/<id>` from its `url` (as models/related-managers.ts). */
function objectKey(o: Item): string | undefined {
  const m = typeof o.url === 'string' ? /\/api\/([a-z-]+)\/([a-z0-9-]+)\/(\d+)\/$/.exec(o.url) : null;
  return m ? `${m[1]}/${m[2]}/${m[3]}` : undefined;
}

/**
 * Attaches the related managers the API loaded to their objects wherever they appear in the context (the object,
 * the objects it points at, the related objects themselves), as properties templates can read (`device.interfaces`,
 * `device.site.racks`) that dict methods, iteration and `tojson` do not list, so the REST representations are unchanged.
 */
export function prepareContext(ctx: Record<string, unknown>): void {
  const related = ctx[RELATED_KEY];
  delete ctx[RELATED_KEY];
  if (!related || typeof related !== 'object' || Array.isArray(related)) return;
  const table = related as Record<string, Record<string, { model?: unknown; items?: unknown; truncated?: unknown }>>;
  const seen = new Set<object>();
  const stack: unknown[] = [ctx];
  while (stack.length) {
    const v = stack.pop();
    if (!v || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    if (v instanceof PyObject) continue;
    const target = v as Item;
    for (const x of Object.values(target)) stack.push(x);
    const key = objectKey(target);
    const relations = key !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;
    if (!relations || typeof relations !== 'object') continue;
    for (const [name, rel] of Object.entries(relations)) {
      if (Object.hasOwn(target, name) || !Array.isArray(rel?.items)) continue;
      const truncated = typeof rel.truncated === 'number' ? rel.truncated : undefined;
      Object.defineProperty(target, name, { value: new RelatedManager(String(rel.model ?? name), rel.items as Item[], truncated), enumerable: false, writable: false, configurable: false });
      stack.push(rel.items);
    }
  }
}
