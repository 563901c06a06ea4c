import { detailError } from '@svc/kernel';
import { validation } from './util.ts';

/** The reference's MAX_FILE_SIZE (5 MiB) and MAX_MESSAGE_SIZE (25,000 characters per message). */
export const MAX_FILE_SIZE = 5_242_880;
export const MAX_MESSAGE_CHARS = 25_000;

/** pdfjs-dist is large; it is loaded on the first PDF upload only. */
async function pdfText(bytes: Uint8Array): Promise<string> {
  const pdfjs: any = await import('pdfjs-dist/legacy/build/pdf.mjs');
  let doc: any;
  try {
    doc = await pdfjs.getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;
  } catch {
    throw validation('Uploaded PDF could not be read');
  }
  try {
    const parts: string[] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items as any[]) {
        if (typeof item.str !== 'string') continue;
        text += item.str + (item.hasEOL ? '\n' : '');
      }
      if (text.trim()) parts.push(`[Page ${n}]\n${text}`);
    }
    return parts.join('\n\n');
  } finally {
    await doc.destroy();
  }
}

/**
 * Text of an uploaded file by its content type, as the reference's processors:
 * PDF pages prefixed `[Page n]`, `text/*` decoded as UTF-8 (then UTF-16 with a
 * BOM, then Latin-1), JSON re-serialised compactly; anything else is a 415.
 */
export async function extractText(bytes: Uint8Array, contentType: string): Promise<string> {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'application/pdf') return pdfText(bytes);
  if (type.startsWith('text/')) {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes);
      if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes);
      return new TextDecoder('latin1').decode(bytes);
    }
  }
  if (type === 'application/json') {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw validation('JSON uploads must be UTF-8 encoded');
    }
    if (!text.trim()) return '';
    try {
      return pythonJson(JSON.parse(text));
    } catch {
      throw validation('Uploaded JSON is invalid');
    }
  }
  throw detailError(415, `Unsupported file type: ${contentType}. Supported types: ['PDFProcessor', 'TextProcessor', 'JSONProcessor']`);
}

/** Python's `json.dumps(v, ensure_ascii=False)`: `, ` and `: ` separators. */
function pythonJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pythonJson).join(', ')}]`;
  return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pythonJson(x)}`).join(', ')}}`;
}

/** The reference's `split_text_into_chunks`: pieces of at most `max` characters, cut at a paragraph, line, sentence or word break when one exists. */
export function splitText(text: string, max = MAX_MESSAGE_CHARS): string[] {
  if (text.length <= max) return [text];
  const chunks: string[] = [];
  let pos = 0;
  while (pos < text.length) {
    const end = pos + max;
    if (end >= text.length) {
      chunks.push(text.slice(pos));
      break;
    }
    let cut = end;
    for (const delim of ['\n\n', '\n', '. ', ' ']) {
      const at = text.lastIndexOf(delim, end - delim.length);
      if (at > pos) {
        cut = at + delim.length;
        break;
      }
    }
    chunks.push(text.slice(pos, cut));
    pos = cut;
  }
  return chunks;
}
