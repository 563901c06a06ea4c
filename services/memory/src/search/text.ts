/**
 * Text normalisation shared by the local embedding and the full-text index,
 * so that both rank on the same notion of a "term" on SQLite and PostgreSQL.
 */

// Negations ("not", "no", "nor") are deliberately not stopwords: "is a nurse" and
// "is not a nurse" must neither match as the same fact nor embed identically.
const STOPWORDS = new Set(
  (
    'a an and are as at be been being but by can could did do does doing done for from had has have having he her hers ' +
    'herself him himself his how i if in into is it its itself just me more most my myself of off on once only ' +
    'or other our ours ourselves out over own same she should so some such than that the their theirs them themselves then ' +
    'there these they this those through to too under until up very was we were what when where which while who whom why ' +
    'will with would you your yours yourself yourselves am im ive id ill s t d ll m re ve don doesn didn isn aren wasn weren ' +
    'also about above after again against all any because before below between both down during each few further here'
  ).split(' '),
);

/** Longest input we look at: bounds CPU on hostile input (documents may be 64 KiB). */
export const MAX_TEXT_CHARS = 65_536;
/** Words longer than this are noise (hashes, base64) and are cut. */
const MAX_WORD_CHARS = 40;

/** Lower-case, compatibility-normalised text without diacritics. */
export function normalizeText(text: string): string {
  return text
    .slice(0, MAX_TEXT_CHARS)
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
}

/** Words (letters and digits) of already-normalised text, apostrophes folded ("don't" → "dont"). */
export function words(normalized: string): string[] {
  const out: string[] = [];
  for (const m of normalized.replace(/['’]/g, '').matchAll(/[\p{L}\p{N}]+/gu)) {
    out.push(m[0].length > MAX_WORD_CHARS ? m[0].slice(0, MAX_WORD_CHARS) : m[0]);
  }
  return out;
}

export function isStopword(word: string): boolean {
  return STOPWORDS.has(word);
}

const VOWEL = /[aeiouy]/;

/**
 * A light English suffix stripper: plural, -ing, -ed, -ly and a final -e, so
 * that "live", "lives", "lived" and "living" share one stem. Deterministic and
 * idempotent enough for matching; not a linguistic stemmer.
 */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3 || !/^[a-z]+$/.test(w)) return w;
  if (w.endsWith('ies') && w.length > 4) w = w.slice(0, -3) + 'y';
  else if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  if (w.endsWith('ing') && w.length - 3 >= 3 && VOWEL.test(w.slice(0, -3))) w = w.slice(0, -3);
  else if (w.endsWith('ed') && w.length - 2 >= 3 && VOWEL.test(w.slice(0, -2))) w = w.slice(0, -2);
  else if (w.endsWith('ly') && w.length - 2 >= 4) w = w.slice(0, -2);
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  // "running" → "runn" → "run"; keep "ll"/"ss"/"zz" words ("fall", "miss") as they are.
  if (w.length > 3 && w[w.length - 1] === w[w.length - 2] && !/[lsz]/.test(w[w.length - 1]!) && !VOWEL.test(w[w.length - 1]!)) {
    w = w.slice(0, -1);
  }
  return w;
}

export interface Analyzed {
  /** Content words as written (normalised), in order. */
  words: string[];
  /** Their stems, in order (same length as words). */
  stems: string[];
}

/**
 * Content words and stems of a text; stopwords are dropped unless the text
 * has nothing else ("who am I?" still has terms).
 */
export function analyze(text: string): Analyzed {
  const all = words(normalizeText(text));
  let content = all.filter((w) => !STOPWORDS.has(w));
  if (content.length === 0) content = all;
  return { words: content, stems: content.map(stem) };
}

/** Distinct stems of a text, in first-seen order, at most `max`. */
export function queryTerms(text: string, max = 32): string[] {
  const seen = new Set<string>();
  for (const s of analyze(text).stems) {
    if (seen.size >= max) break;
    seen.add(s);
  }
  return [...seen];
}

/** What the full-text index stores for a document: its stems separated by spaces. */
export function indexBody(text: string): string {
  return analyze(text).stems.join(' ');
}
