/**
 * PostgreSQL jsonb `@>` containment, evaluated in JS so SQLite filters give
 * the same answers as PostgreSQL:
 * - objects: every key of the right side exists on the left and contains its value;
 * - arrays: every element of the right side is contained in some element of the left
 *   (order and duplicates ignored); a scalar on the right matches an array on the left
 *   only at the top level (PG's "array contains primitive" special case);
 * - scalars: equal by type and value (numbers numerically, 1 = 1.0).
 */
export function jsonContains(left: unknown, right: unknown, topLevel = true): boolean {
  if (Array.isArray(right)) {
    if (!Array.isArray(left)) return false;
    return right.every((r) => left.some((l) => jsonContains(l, r, false)));
  }
  if (right !== null && typeof right === 'object') {
    if (left === null || typeof left !== 'object' || Array.isArray(left)) return false;
    const l = left as Record<string, unknown>;
    for (const [k, v] of Object.entries(right as Record<string, unknown>)) {
      if (!Object.prototype.hasOwnProperty.call(l, k)) return false;
      if (!jsonContains(l[k], v, false)) return false;
    }
    return true;
  }
  if (Array.isArray(left)) {
    return topLevel && left.some((l) => !Array.isArray(l) && (l === null || typeof l !== 'object') && scalarEqual(l, right));
  }
  return scalarEqual(left, right);
}

function scalarEqual(a: unknown, b: unknown): boolean {
  if (typeof a !== typeof b) return false;
  return a === b;
}
