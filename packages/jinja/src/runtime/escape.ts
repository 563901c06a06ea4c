// markupsafe.escape: the five HTML-significant characters.
const ESC = /[&<>"']/g;
const ESC_TEST = /[&<>"']/;
const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };
export function escapeHtml(s: string): string {
  return ESC_TEST.test(s) ? s.replace(ESC, (c) => MAP[c]) : s;
}
