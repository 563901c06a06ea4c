/**
 * CSV as NetBox's import form reads it (RFC 4180: quoted fields, doubled quotes, newlines inside quotes).
 * The first row names the fields; blank lines are skipped. Returns the header and the records, or an error.
 */
export function parseCsv(text: string, maxRecords = 10_000): { header: string[]; records: string[][] } | { error: string } {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const src = text.replace(/^\uFEFF/, '');
  const endRow = () => {
    row.push(field);
    field = '';
    if (!(row.length === 1 && row[0]!.trim() === '')) rows.push(row);
    row = [];
  };
  while (i < src.length) {
    const c = src[i]!;
    if (quoted) {
      if (c === '"') {
        if (src[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && src[i + 1] === '\n') i++;
      endRow();
      if (rows.length > maxRecords + 1) return { error: `Too many records: at most ${maxRecords} per import.` };
    } else field += c;
    i++;
  }
  if (quoted) return { error: 'The CSV data ends inside a quoted field.' };
  if (field !== '' || row.length) endRow();
  if (rows.length === 0) return { error: 'No CSV data: the first line must name the fields.' };
  const header = rows[0]!.map((h) => h.trim());
  const bad = header.find((h) => !/^[a-z][a-z0-9_]*$/.test(h));
  if (bad !== undefined) return { error: `Unknown column name in the header: "${bad.slice(0, 100)}".` };
  for (let r = 1; r < rows.length; r++) {
    if (rows[r]!.length !== header.length) return { error: `Row ${r}: ${rows[r]!.length} values for ${header.length} columns.` };
  }
  return { header, records: rows.slice(1) };
}
