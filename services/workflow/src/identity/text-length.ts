/**
 * Length checks in code points (what a person counts as characters, and
 * what the reference's Python `len()` gives) that allocate nothing: a
 * spread (`[...s].length`) of a 100 MB string builds an array of 100 million
 * strings and takes the process down. A UTF-16 string of n units holds
 * between n/2 and n code points, so most answers need no count at all.
 */
export function codePointsOver(s: string, max: number): boolean {
  if (s.length <= max) return false;
  if (s.length > 2 * max) return true;
  return countCodePoints(s) > max;
}

export function codePointsUnder(s: string, min: number): boolean {
  if (s.length < min) return true;
  if (s.length >= 2 * min) return false;
  return countCodePoints(s) < min;
}

function countCodePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one code point; a lone surrogate counts as one, as the spread does.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}
