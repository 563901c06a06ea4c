/**
 * additional_headers as NetBox's Webhook.render_headers reads the rendered
 * text: Python str.splitlines(), lines without ':' skipped, split on the
 * first ':', both sides str.strip()ped, later duplicates win.
 */

const PY_LINE_BREAKS = /\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]/;
const PY_SPACE = '[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const STRIP = new RegExp(`^${PY_SPACE}+|${PY_SPACE}+$`, 'g');

export function pyStrip(s: string): string {
  return s.replace(STRIP, '');
}

export function parseHeaderLines(rendered: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const line of rendered.split(PY_LINE_BREAKS)) {
    const i = line.indexOf(':');
    if (i < 0) continue;
    out.push([pyStrip(line.slice(0, i)), pyStrip(line.slice(i + 1))]);
  }
  return out;
}

/** Header names compare case-insensitively on the wire (requests' CaseInsensitiveDict): the last one set wins, keeping its spelling. */
export class HeaderSet {
  #m = new Map<string, [string, string]>();
  set(name: string, value: string): void {
    this.#m.set(name.toLowerCase(), [name, value]);
  }
  has(name: string): boolean {
    return this.#m.has(name.toLowerCase());
  }
  get(name: string): string | undefined {
    return this.#m.get(name.toLowerCase())?.[1];
  }
  entries(): Array<[string, string]> {
    return [...this.#m.values()];
  }
}
