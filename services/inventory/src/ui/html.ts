/**
 * HTML building for the admin UI. Every interpolated value is escaped unless
 * it is already a SafeHtml fragment produced by this module, so markup can
 * only come from template literals written in this folder.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
  '=': '&#61;',
};

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(value: unknown): string {
  const s = value === null || value === undefined ? '' : String(value);
  return s.replace(/[&<>"'`=]/g, (c) => ESCAPES[c]!);
}

type Interpolation = SafeHtml | string | number | boolean | null | undefined | Interpolation[];

function render(v: Interpolation): string {
  if (v instanceof SafeHtml) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  if (v === null || v === undefined || v === false) return '';
  return escapeHtml(v);
}

/** Tagged template: `html\`<td>${name}</td>\`` escapes `name`; arrays of fragments are joined. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Percent-encodes one path segment or query value for use inside an href. */
export function urlPart(value: string | number): string {
  return encodeURIComponent(String(value));
}

/** Pretty JSON for <pre> blocks (escaped when interpolated). */
export function prettyJson(value: unknown): string {
  if (value === undefined) return '';
  try {
    return JSON.stringify(value, null, 2) ?? '';
  } catch {
    return String(value);
  }
}
