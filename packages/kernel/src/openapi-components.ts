/**
 * Moves schemas and responses that occur more than once in an OpenAPI
 * document into `components` and points every occurrence at them with `$ref`.
 *
 * Route schemas are written inline (TypeBox objects shared between routes),
 * so @fastify/swagger repeats a model in every operation that uses it: the
 * inventory's document was over a megabyte and Swagger UI took seconds per
 * expanded operation. Names come from a schema's `title` where it has one,
 * else from where it first occurs (operation, property, …).
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

export interface ShareOptions {
  /** Smallest serialized size (bytes) worth a component; smaller schemas stay inline. */
  minBytes?: number;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keys under which a schema holds schemas: a map of them, a list of them, or one. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const SCHEMA_ONE = new Set(['items', 'additionalProperties', 'not', 'contains', 'if', 'then', 'else', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems']);

/** JSON text with object keys sorted: equal schemas written in another key order are one component. */
function canonical(v: Json, memo?: WeakMap<object, string>): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const known = memo?.get(v);
  if (known !== undefined) return known;
  const text = Array.isArray(v)
    ? `[${v.map((x) => canonical(x, memo)).join(',')}]`
    : `{${Object.keys(v)
        .sort()
        .filter((k) => v[k] !== undefined)
        .map((k) => `${JSON.stringify(k)}:${canonical(v[k]!, memo)}`)
        .join(',')}}`;
  memo?.set(v, text);
  return text;
}

function pascal(s: string): string {
  return s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

/** Calls `fn(schema, name, set)` for every schema directly below `schema` (its properties, items, anyOf members, …). */
function eachChild(schema: Obj, name: string, fn: (child: Obj, name: string, set: (v: Json) => void) => void): void {
  for (const [k, v] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(k) && isObj(v)) {
      for (const [p, s] of Object.entries(v)) if (isObj(s)) fn(s, `${name}${pascal(p)}`, (x) => (v[p] = x));
    } else if (SCHEMA_LISTS.has(k) && Array.isArray(v)) {
      v.forEach((s, i) => {
        if (isObj(s)) fn(s, i === 0 ? name : `${name}Option${i + 1}`, (x) => (v[i] = x));
      });
    } else if (SCHEMA_ONE.has(k) && isObj(v)) {
      fn(v, k === 'items' ? `${name}Item` : `${name}${pascal(k)}`, (x) => (schema[k] = x));
    }
  }
}

interface Site {
  schema: Obj;
  name: string;
  set: (v: Json) => void;
}

/** Every schema position reachable from the operations: parameters, request bodies, responses. */
function operationSchemas(doc: Obj, fn: (site: Site) => void): void {
  const paths = isObj(doc.paths) ? doc.paths : {};
  for (const [url, item] of Object.entries(paths)) {
    if (!isObj(item)) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!isObj(op)) continue;
      const base = typeof op.operationId === 'string' ? pascal(op.operationId) : pascal(`${url.replace(/\{[^}]*\}/g, ' ').replace(/^\/api\//, '/')} ${method}`);
      const media = (content: Json, name: string) => {
        if (!isObj(content)) return;
        for (const m of Object.values(content)) if (isObj(m) && isObj(m.schema)) fn({ schema: m.schema, name, set: (x) => (m.schema = x) });
      };
      if (Array.isArray(op.parameters)) {
        for (const p of op.parameters) if (isObj(p) && isObj(p.schema)) fn({ schema: p.schema, name: `${base}${pascal(String(p.name ?? 'Param'))}`, set: (x) => (p.schema = x) });
      }
      if (isObj(op.requestBody)) media(op.requestBody.content ?? null, `${base}Request`);
      if (isObj(op.responses)) for (const [status, r] of Object.entries(op.responses)) if (isObj(r)) media(r.content ?? null, Number(status) >= 400 ? 'Error' : `${base}${status}`);
    }
  }
}

/** Rewrites `doc` in place (and returns it) with repeated schemas and responses as components. */
export function shareComponents(doc: Obj, opts: ShareOptions = {}): Obj {
  const minBytes = opts.minBytes ?? 50;
  const components: Obj = isObj(doc.components) ? doc.components : (doc.components = {});
  const schemas: Obj = isObj(components.schemas) ? components.schemas : (components.schemas = {});

  // 1. How often each schema (by canonical text) occurs anywhere below an operation.
  const counts = new Map<string, number>();
  // Each subtree's text is computed once (the document is not changed until step 2).
  const textOf = new WeakMap<object, string>();
  const count = (s: Obj) => {
    const text = canonical(s, textOf);
    if (text.length >= minBytes && !('$ref' in s)) counts.set(text, (counts.get(text) ?? 0) + 1);
    eachChild(s, '', (c) => count(c));
  };
  operationSchemas(doc, ({ schema }) => count(schema));

  // 2. Top down: a schema seen twice or more becomes a component (its own children shared the same way).
  const byText = new Map<string, string>();
  const taken = new Set(Object.keys(schemas));
  const uniqueName = (wanted: string) => {
    const base = wanted.replace(/[^A-Za-z0-9._-]/g, '') || 'Schema';
    let n = base;
    for (let i = 2; taken.has(n); i++) n = `${base}${i}`;
    taken.add(n);
    return n;
  };
  const share = (s: Obj, name: string, set: (v: Json) => void) => {
    const text = textOf.get(s) ?? canonical(s);
    if ((counts.get(text) ?? 0) >= 2) {
      let ref = byText.get(text);
      if (!ref) {
        ref = uniqueName(typeof s.title === 'string' && s.title ? s.title : name);
        byText.set(text, ref);
        const body = JSON.parse(JSON.stringify(s)) as Obj;
        schemas[ref] = body;
        eachChild(body, ref, (c, n, setChild) => share(c, n, setChild));
      }
      set({ $ref: `#/components/schemas/${ref}` });
      return;
    }
    eachChild(s, name, (c, n, setChild) => share(c, n, setChild));
  };
  operationSchemas(doc, ({ schema, name, set }) => share(schema, name, set));

  // 3. A component used only once (it was repeated only inside another component) goes back inline.
  const uses = new Map<string, number>();
  const countRefs = (v: Json) => {
    if (Array.isArray(v)) v.forEach(countRefs);
    else if (isObj(v)) {
      if (typeof v.$ref === 'string' && v.$ref.startsWith('#/components/schemas/')) {
        const n = v.$ref.slice('#/components/schemas/'.length);
        uses.set(n, (uses.get(n) ?? 0) + 1);
      }
      for (const x of Object.values(v)) countRefs(x);
    }
  };
  countRefs(doc);
  const created = new Set(byText.values());
  const inline = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(inline);
    if (!isObj(v)) return v;
    if (typeof v.$ref === 'string' && Object.keys(v).length === 1) {
      const n = v.$ref.slice('#/components/schemas/'.length);
      if (created.has(n) && uses.get(n) === 1) {
        const body = schemas[n]!;
        delete schemas[n];
        return inline(body);
      }
    }
    for (const k of Object.keys(v)) v[k] = inline(v[k]!);
    return v;
  };
  doc.paths = inline(doc.paths ?? {});
  for (const n of Object.keys(schemas)) if (n in schemas) schemas[n] = inline(schemas[n]!);

  // 4. Whole responses that repeat (the same error body under many operations) become components.responses.
  const responses: Obj = isObj(components.responses) ? components.responses : {};
  const respCounts = new Map<string, number>();
  const eachResponse = (fn: (r: Obj, status: string, set: (v: Json) => void) => void) => {
    for (const item of Object.values(isObj(doc.paths) ? doc.paths : {})) {
      if (!isObj(item)) continue;
      for (const op of Object.values(item)) {
        if (!isObj(op) || !isObj(op.responses)) continue;
        const rs = op.responses;
        for (const [status, r] of Object.entries(rs)) if (isObj(r) && !('$ref' in r)) fn(r, status, (x) => (rs[status] = x));
      }
    }
  };
  eachResponse((r) => {
    const text = canonical(r);
    if (text.length >= minBytes) respCounts.set(text, (respCounts.get(text) ?? 0) + 1);
  });
  const respByText = new Map<string, string>();
  const respTaken = new Set(Object.keys(responses));
  eachResponse((r, status, set) => {
    const text = canonical(r);
    if ((respCounts.get(text) ?? 0) < 2) return;
    let name = respByText.get(text);
    if (!name) {
      // Named after its schema; an error body shared by many statuses is just "Error".
      const schemaRef = isObj(r.content) ? Object.values(r.content).map((m) => (isObj(m) && isObj(m.schema) && typeof m.schema.$ref === 'string' ? m.schema.$ref.split('/').pop() : undefined))[0] : undefined;
      const base = (schemaRef ?? (Number(status) >= 400 ? 'Error' : 'Response')).replace(/[^A-Za-z0-9._-]/g, '');
      name = base;
      for (let i = 2; respTaken.has(name); i++) name = `${base}_${i}`;
      respTaken.add(name);
      respByText.set(text, name);
      responses[name] = r;
    }
    set({ $ref: `#/components/responses/${name}` });
  });
  if (Object.keys(responses).length > 0) components.responses = responses;
  return doc;
}

/**
 * Parameters that repeat (filters, paging) become components.parameters,
 * named after the parameter. Only for the copy Swagger UI reads: clients
 * (NetBox's Ansible inventory among them) read the parameter names of an
 * operation straight from its list.
 */
export function shareParameters(doc: Obj): Obj {
  const components: Obj = isObj(doc.components) ? doc.components : (doc.components = {});
  const parameters: Obj = isObj(components.parameters) ? components.parameters : {};
  const paramCounts = new Map<string, number>();
  const eachParam = (fn: (p: Obj, list: Json[], i: number) => void) => {
    for (const item of Object.values(isObj(doc.paths) ? doc.paths : {})) {
      if (!isObj(item)) continue;
      for (const op of Object.values(item)) {
        if (!isObj(op) || !Array.isArray(op.parameters)) continue;
        const list = op.parameters;
        list.forEach((p, i) => {
          if (isObj(p) && !('$ref' in p)) fn(p, list, i);
        });
      }
    }
  };
  eachParam((p) => {
    // false is the default: saying it on every filter of every list adds up.
    if (p.required === false) delete p.required;
    const text = canonical(p);
    paramCounts.set(text, (paramCounts.get(text) ?? 0) + 1);
  });
  const paramByText = new Map<string, string>();
  const paramTaken = new Set(Object.keys(parameters));
  eachParam((p, list, i) => {
    const text = canonical(p);
    // A reference costs about 45 bytes: only parameters longer than that and used twice are worth one.
    if ((paramCounts.get(text) ?? 0) < 2 || text.length < 50) return;
    let name = paramByText.get(text);
    if (!name) {
      const base = `${String(p.in ?? '')}.${String(p.name ?? 'param')}`.replace(/[^A-Za-z0-9._-]/g, '_');
      name = base;
      for (let n = 2; paramTaken.has(name); n++) name = `${base}.${n}`;
      paramTaken.add(name);
      paramByText.set(text, name);
      parameters[name] = p;
    }
    list[i] = { $ref: `#/components/parameters/${name}` };
  });
  if (Object.keys(parameters).length > 0) components.parameters = parameters;
  return doc;
}

/**
 * The same document as OpenAPI 3.0.3, for Swagger UI only. Swagger UI 5
 * resolves a 3.1 document through ApiDOM, which walks and clones every node
 * of it: the inventory's /docs took 6–8 s to list its tags and 4 s to open an
 * operation on this machine; a 3.0 document goes through its older resolver.
 * The only 3.1 constructs the services' documents use are JSON Schema's
 * `{type: 'null'}` alternatives, `type` lists, `const` and `examples`: they
 * become 3.0's `nullable`, `enum` and `example`. Rewrites `doc` in place.
 */
export function toOpenApi30(doc: Obj): Obj {
  const schema = (s: Json): Json => {
    if (Array.isArray(s)) return s.map(schema);
    if (!isObj(s)) return s;
    for (const k of Object.keys(s)) {
      if (k === 'properties' || k === 'patternProperties' || k === '$defs') {
        const m = s[k];
        if (isObj(m)) for (const p of Object.keys(m)) m[p] = schema(m[p]!);
      } else if (k !== 'enum' && k !== 'example' && k !== 'default') s[k] = schema(s[k]!);
    }
    if (Array.isArray(s.type)) {
      const types = s.type.filter((t) => t !== 'null');
      if (types.length < s.type.length) s.nullable = true;
      if (types.length === 1) s.type = types[0]!;
      else {
        delete s.type;
        s.anyOf = types.map((t) => ({ type: t }));
      }
    }
    for (const key of ['anyOf', 'oneOf'] as const) {
      const list = s[key];
      if (!Array.isArray(list)) continue;
      const rest = list.filter((x) => !(isObj(x) && x.type === 'null' && Object.keys(x).length === 1));
      if (rest.length === list.length) continue;
      s.nullable = true;
      if (rest.length === 1 && isObj(rest[0]) && !('$ref' in rest[0]) && Object.keys(s).length === 2) return { ...rest[0], nullable: true };
      if (rest.length === 0) {
        delete s[key];
      } else s[key] = rest;
    }
    if ('const' in s) {
      s.enum = [s.const!];
      delete s.const;
    }
    if (Array.isArray(s.examples) && !('example' in s)) {
      s.example = s.examples[0]!;
      delete s.examples;
    }
    return s;
  };
  const media = (content: Json) => {
    if (isObj(content)) for (const m of Object.values(content)) if (isObj(m) && m.schema !== undefined) m.schema = schema(m.schema);
  };
  const components = isObj(doc.components) ? doc.components : {};
  if (isObj(components.schemas)) for (const n of Object.keys(components.schemas)) components.schemas[n] = schema(components.schemas[n]!);
  const param = (p: Json) => {
    if (isObj(p) && p.schema !== undefined) p.schema = schema(p.schema);
  };
  if (isObj(components.parameters)) Object.values(components.parameters).forEach(param);
  if (isObj(components.responses)) for (const r of Object.values(components.responses)) if (isObj(r)) media(r.content ?? null);
  for (const item of Object.values(isObj(doc.paths) ? doc.paths : {})) {
    if (!isObj(item)) continue;
    for (const op of Object.values(item)) {
      if (!isObj(op)) continue;
      if (Array.isArray(op.parameters)) op.parameters.forEach(param);
      if (isObj(op.requestBody)) media(op.requestBody.content ?? null);
      if (isObj(op.responses)) for (const r of Object.values(op.responses)) if (isObj(r)) media(r.content ?? null);
    }
  }
  doc.openapi = '3.0.3';
  return doc;
}

/**
 * One document per tag (an operation goes under its first tag), each holding
 * only the components its operations reach, in the order the tags are first
 * used. Swagger UI's cost grows with the whole document it is given (it
 * converts and walks all of it before it draws anything), so /docs can offer
 * a large API section by section.
 */
export function splitByTag(doc: Obj): Map<string, Obj> {
  const byTag = new Map<string, Obj>();
  for (const [url, item] of Object.entries(isObj(doc.paths) ? doc.paths : {})) {
    if (!isObj(item)) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!isObj(op)) continue;
      const tag = Array.isArray(op.tags) && typeof op.tags[0] === 'string' ? op.tags[0] : 'default';
      let paths = byTag.get(tag);
      if (!paths) byTag.set(tag, (paths = {}));
      const target = (paths[url] ??= {}) as Obj;
      target[method] = op;
    }
  }
  const components = isObj(doc.components) ? doc.components : {};
  const out = new Map<string, Obj>();
  for (const [tag, paths] of byTag) {
    const kept: Record<string, Obj> = {};
    const seen = new Set<string>();
    const walk = (v: Json) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (isObj(v)) {
        const ref = v.$ref;
        if (typeof ref === 'string' && ref.startsWith('#/components/') && !seen.has(ref)) {
          seen.add(ref);
          const [kind, name] = ref.slice('#/components/'.length).split('/') as [string, string];
          const group = components[kind];
          const target = isObj(group) ? group[name] : undefined;
          if (target !== undefined) {
            (kept[kind] ??= {})[name] = target;
            walk(target);
          }
        }
        for (const x of Object.values(v)) walk(x);
      }
    };
    walk(paths);
    if (components.securitySchemes !== undefined) kept.securitySchemes = components.securitySchemes as Obj;
    const section: Obj = { ...doc, paths, components: kept };
    if (Array.isArray(doc.tags)) section.tags = doc.tags.filter((t) => isObj(t) && t.name === tag);
    out.set(tag, section);
  }
  return out;
}
