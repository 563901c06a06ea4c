/**
 * A bounded multipart/form-data parser (RFC 7578, RFC 2046 §5.1) for a body
 * already in memory: the upload routes read a body of known, small length
 * (Content-Length up to the spool limit) into one buffer and take its parts
 * here as views of that buffer, where a streaming parser would copy every
 * chunk through a per-part stream. Larger bodies and bodies without a length
 * still go through the streaming parser (@fastify/multipart), which spools.
 *
 * What a part means follows the streaming parser the routes used before, so
 * an upload is answered the same whichever path read it: a part without a
 * `form-data` Content-Disposition, or whose name or file name holds a bare
 * CR or LF, is skipped; a part is a file when it has a `filename` (or
 * `filename*`) parameter or the type application/octet-stream; a field's
 * value is decoded with its part's charset (UTF-8 by default) and cut at
 * `maxFieldBytes`; parameter values are UTF-8 (raw, as browsers send them,
 * or RFC 5987 `name*=charset'lang'%XX`), with `\"` and `\\` unescaped in
 * quoted strings. Every bound is checked before the work it bounds: the
 * header block of a part is searched for no further than `maxHeaderBytes`,
 * and parts, files and fields are counted as they are met.
 */

export interface MultipartLimits {
  /** Parts of any kind (each skipped part counts too). */
  maxParts: number;
  maxFiles: number;
  maxFields: number;
  /** Bytes of one part's header block, its final CRLF CRLF not counted. */
  maxHeaderBytes: number;
  /** Header lines of one part. */
  maxHeaderPairs: number;
  /** A field's value is cut at this many bytes (as the streaming parser's fieldSize). */
  maxFieldBytes: number;
}

/** A body the parser refuses: 400 (malformed) or 413 (a limit). */
export class MultipartError extends Error {
  constructor(
    readonly status: 400 | 413,
    message: string,
  ) {
    super(message);
  }
}

export interface MultipartPart {
  /** The `name` parameter (undefined when the part has none). */
  name: string | undefined;
  /** The `filename` parameter, undefined for a field. */
  filename: string | undefined;
  file: boolean;
  /** The part's Content-Type, lower case, without parameters ('text/plain' when absent). */
  contentType: string;
  /** A file's bytes: a view of the body, not a copy. */
  data: Buffer;
  /** A field's value, decoded (undefined for a file). */
  value: string | undefined;
}

const HEADER_END = Buffer.from('\r\n\r\n');
const LATIN1_CHARSETS = new Set(['latin1', 'ascii', 'us-ascii', 'iso-8859-1', 'iso8859-1', 'iso88591', 'iso_8859-1', 'windows-1252', 'cp1252', 'x-cp1252', 'binary']);

/**
 * The boundary of a multipart/form-data Content-Type, or undefined when the
 * type is another or its boundary is missing or invalid (RFC 2046: 1 to 70
 * characters of a restricted set, not ending in a space).
 */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (typeof contentType !== 'string' || contentType.length > 4096) return undefined;
  const params = parseHeaderValue(contentType);
  if (params.type !== 'multipart/form-data') return undefined;
  const b = params.params.get('boundary');
  if (b === undefined || b.length < 1 || b.length > 70 || b.endsWith(' ')) return undefined;
  // bchars: DIGIT / ALPHA / "'" / "(" / ")" / "+" / "_" / "," / "-" / "." / "/" / ":" / "=" / "?" / " "
  if (!/^[0-9A-Za-z'()+_,\-./:=? ]+$/.test(b)) return undefined;
  return b;
}

/**
 * The parts of a multipart body, in order. Throws MultipartError for a
 * malformed body or one over a limit; an empty body is an empty form.
 */
export function parseMultipart(body: Buffer, boundary: string, limits: MultipartLimits): MultipartPart[] {
  const parts: MultipartPart[] = [];
  if (body.length === 0) return parts;
  const dash = Buffer.from(`--${boundary}`, 'latin1');
  const delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  // The first boundary: at the very start, or after a preamble (ignored) as a line of its own.
  let pos: number;
  if (body.subarray(0, dash.length).equals(dash)) pos = dash.length;
  else {
    const at = body.indexOf(delimiter);
    if (at === -1) throw new MultipartError(400, 'Unexpected end of multipart data: no boundary');
    pos = at + delimiter.length;
  }
  let count = 0;
  let files = 0;
  let fields = 0;
  for (;;) {
    // After a boundary: `--` closes the body (an epilogue is ignored); else optional padding, then CRLF.
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return parts;
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++;
    if (body[pos] !== 0x0d || body[pos + 1] !== 0x0a) throw new MultipartError(400, pos >= body.length ? 'Unexpected end of multipart data' : 'Malformed multipart boundary line');
    pos += 2;
    if (++count > limits.maxParts) throw new MultipartError(413, 'reach parts limit');
    // The header block: searched no further than its limit allows.
    let headerEnd: number;
    let contentStart: number;
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) {
      headerEnd = pos;
      contentStart = pos + 2;
    } else {
      const window = body.subarray(pos, Math.min(body.length, pos + limits.maxHeaderBytes + HEADER_END.length));
      const at = window.indexOf(HEADER_END);
      if (at === -1) {
        if (window.length < limits.maxHeaderBytes + HEADER_END.length) throw new MultipartError(400, 'Unexpected end of multipart data in a part header');
        throw new MultipartError(413, `Part header larger than ${limits.maxHeaderBytes} bytes`);
      }
      headerEnd = pos + at;
      contentStart = headerEnd + HEADER_END.length;
    }
    const headers = parseHeaderBlock(body.toString('latin1', pos, headerEnd), limits.maxHeaderPairs);
    const end = body.indexOf(delimiter, contentStart);
    if (end === -1) throw new MultipartError(400, 'Unexpected end of multipart data');
    const data = body.subarray(contentStart, end);
    pos = end + delimiter.length;
    const part = describePart(headers);
    if (!part) continue;
    if (part.file) {
      if (++files > limits.maxFiles) throw new MultipartError(413, 'reach files limit');
    } else {
      if (++fields > limits.maxFields) throw new MultipartError(413, 'reach fields limit');
      const cut = data.length > limits.maxFieldBytes ? data.subarray(0, limits.maxFieldBytes) : data;
      part.value = LATIN1_CHARSETS.has(part.charset) ? cut.toString('latin1') : cut.toString('utf8');
    }
    parts.push({ name: part.name, filename: part.filename, file: part.file, contentType: part.contentType, data: part.file ? data : Buffer.alloc(0), value: part.value });
  }
}

/** Header lines (`Name: value`, obsolete folding joined); names lower case, the first of each kept. */
function parseHeaderBlock(block: string, maxPairs: number): Map<string, string> {
  const headers = new Map<string, string>();
  if (block === '') return headers;
  const lines = block.split('\r\n');
  let pairs = 0;
  let last: string | undefined;
  for (const line of lines) {
    if (line.startsWith(' ') || line.startsWith('\t')) {
      if (pairs === 0) throw new MultipartError(400, 'Malformed part header');
      if (last !== undefined) headers.set(last, `${headers.get(last)} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw new MultipartError(400, 'Malformed part header');
    if (++pairs > maxPairs) throw new MultipartError(413, 'Too many part header lines');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (headers.has(name)) {
      last = undefined;
      continue;
    }
    headers.set(name, line.slice(colon + 1).trim());
    last = name;
  }
  return headers;
}

interface Described {
  name: string | undefined;
  filename: string | undefined;
  file: boolean;
  contentType: string;
  charset: string;
  value: string | undefined;
}

function hasLineBreak(s: string | undefined): boolean {
  return s !== undefined && (s.includes('\r') || s.includes('\n'));
}

/** What a part is, from its headers; undefined for a part the form skips. */
function describePart(headers: Map<string, string>): Described | undefined {
  const disposition = headers.get('content-disposition');
  if (disposition === undefined) return undefined;
  const d = parseHeaderValue(disposition);
  if (d.type !== 'form-data') return undefined;
  const name = d.params.get('name');
  const filename = d.params.get('filename*') ?? d.params.get('filename');
  if (hasLineBreak(name) || hasLineBreak(filename)) return undefined;
  const ct = headers.get('content-type');
  const t = ct ? parseHeaderValue(ct) : undefined;
  const contentType = t?.type || 'text/plain';
  const charset = t?.params.get('charset')?.toLowerCase() ?? 'utf8';
  return { name, filename, file: filename !== undefined || contentType === 'application/octet-stream', contentType, charset, value: undefined };
}

/**
 * `type; key=value; key="quoted"; key*=charset'lang'%XX`: the type lower
 * case, parameter names lower case (the first of each kept), values
 * unquoted and decoded (header bytes arrive as latin1 and are UTF-8).
 */
export function parseHeaderValue(header: string): { type: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  let i = header.indexOf(';');
  const type = (i === -1 ? header : header.slice(0, i)).trim().toLowerCase();
  while (i !== -1 && i < header.length) {
    i++;
    while (header[i] === ' ' || header[i] === '\t') i++;
    const eq = header.indexOf('=', i);
    const semi = header.indexOf(';', i);
    if (eq === -1 || (semi !== -1 && semi < eq)) {
      // A parameter without a value: skipped.
      i = semi;
      continue;
    }
    const key = header.slice(i, eq).trim().toLowerCase();
    let j = eq + 1;
    while (header[j] === ' ' || header[j] === '\t') j++;
    let raw: string;
    if (header[j] === '"') {
      // quoted-string: `\"` and `\\` stand for the character; another escaped character keeps its backslash.
      let out = '';
      j++;
      let closed = false;
      while (j < header.length) {
        const c = header[j]!;
        if (c === '\\' && j + 1 < header.length) {
          const n = header[j + 1]!;
          out += n === '"' || n === '\\' ? n : c + n;
          j += 2;
          continue;
        }
        if (c === '"') {
          closed = true;
          j++;
          break;
        }
        out += c;
        j++;
      }
      raw = out;
      if (!closed) j = header.length;
      const next = header.indexOf(';', j);
      i = next;
    } else {
      const next = header.indexOf(';', j);
      raw = (next === -1 ? header.slice(j) : header.slice(j, next)).trim();
      i = next;
    }
    if (key === '' || params.has(key)) continue;
    let value: string | undefined;
    if (key.endsWith('*')) value = decodeExtValue(raw);
    else value = utf8FromLatin1(raw);
    if (value !== undefined) params.set(key, value);
  }
  return { type, params };
}

/** Header text (bytes as latin1) read as UTF-8, as browsers send non-ASCII names. */
function utf8FromLatin1(s: string): string {
  for (let k = 0; k < s.length; k++) if (s.charCodeAt(k) > 0x7f) return Buffer.from(s, 'latin1').toString('utf8');
  return s;
}

/** RFC 5987 `charset'lang'pct-encoded` (UTF-8 or ISO-8859-1); undefined for another charset or a malformed value. */
function decodeExtValue(raw: string): string | undefined {
  const a = raw.indexOf("'");
  const b = a === -1 ? -1 : raw.indexOf("'", a + 1);
  if (b === -1) return undefined;
  const charset = raw.slice(0, a).toLowerCase();
  const bytes: number[] = [];
  const enc = raw.slice(b + 1);
  for (let k = 0; k < enc.length; k++) {
    const c = enc.charCodeAt(k);
    if (c === 0x25 && /^[0-9A-Fa-f]{2}$/.test(enc.slice(k + 1, k + 3))) {
      bytes.push(parseInt(enc.slice(k + 1, k + 3), 16));
      k += 2;
    } else bytes.push(c & 0xff);
  }
  const buf = Buffer.from(bytes);
  if (charset === 'utf-8' || charset === 'utf8') return buf.toString('utf8');
  if (LATIN1_CHARSETS.has(charset)) return buf.toString('latin1');
  return undefined;
}
