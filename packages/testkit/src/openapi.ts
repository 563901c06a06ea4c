/**
 * An OpenAPI document with every local `$ref` replaced by (a copy of) its
 * target, for tests that walk operations' schemas directly. The services
 * share repeated schemas as components (kernel openapi-components.ts).
 * Recursive schemas stop at `depth` references.
 */
export function derefOpenApi<T>(doc: T, depth = 8): T {
  const root = doc as unknown;
  const resolve = (v: unknown, seen: number): unknown => {
    if (Array.isArray(v)) return v.map((x) => resolve(x, seen));
    if (!v || typeof v !== 'object') return v;
    const ref = (v as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/')) {
      if (seen >= depth) return {};
      const target = ref
        .slice(2)
        .split('/')
        .reduce<any>((o, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], root);
      const { $ref: _, ...siblings } = v as Record<string, unknown>;
      return resolve({ ...target, ...siblings }, seen + 1);
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x, seen)]));
  };
  return resolve(doc, 0) as T;
}
