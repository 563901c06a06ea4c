/** Knows which methods each route pattern answers, to tell 405 from 404. */
export class MethodIndex {
  #routes: Array<{ methods: Set<string>; url: string; re?: RegExp }> = [];

  /** Called for every route a service registers (thousands for the inventory): the pattern is built on the first 404. */
  add(method: string | string[], url: string): void {
    this.#routes.push({ methods: new Set(Array.isArray(method) ? method : [method]), url });
  }

  otherMethodMatches(method: string, path: string): boolean {
    return this.#routes.some((r) => !r.methods.has(method) && (r.re ??= patternOf(r.url)).test(path));
  }
}

function patternOf(url: string): RegExp {
  return new RegExp(
    '^' +
      url
        .split('/')
        .map((seg) => {
          if (seg === '*') return '.*';
          // A segment may mix literals and params (`{user_id}sessions` is `:user_id` + `sessions`).
          return seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+');
        })
        .join('/') +
      '$',
  );
}
