// Number → text conversions shared by printf-style and str.format formatting,
// matching CPython's rounding (JS toFixed/toExponential also round the exact binary value).

import { floatRepr } from './repr.js';

const POW2 = Array.from({ length: 102 }, (_, i) => 2 ** i);

export function fixed(x: number, prec: number): string {
  if (!Number.isFinite(x)) return nonFinite(x);
  if (Math.abs(x) < 1e21 && prec <= 100) {
    const a = Math.abs(x);
    let s = a.toFixed(prec);
    // toFixed rounds the exact binary value but breaks exact ties upwards; CPython rounds half
    // to even. a * 10**prec is a tie exactly when a has prec + 1 fractional bits (10 = 2 * 5, 5 odd),
    // which multiplying by powers of two tests without rounding error.
    if (prec < 100) {
      const scaled = a * POW2[prec + 1];
      if (Number.isInteger(scaled) && !Number.isInteger(scaled / 2)) {
        const ext = a.toFixed(prec + 1); // exact: ends in the tie digit 5
        const down = ext.slice(0, ext.length - 1).replace(/\.$/, '');
        if (Number(down[down.length - 1]) % 2 === 0) s = down;
      }
    }
    return x < 0 || Object.is(x, -0) ? '-' + s : s;
  }
  // toFixed switches to exponent form past 1e21: the integer part is exact in BigInt
  const ip = BigInt(Math.trunc(x)).toString();
  return prec > 0 ? `${ip}.${'0'.repeat(prec)}` : ip;
}

const ZEROS = Array.from({ length: 101 }, (_, p) => (p ? '.' + '0'.repeat(p) : ''));

/** Python's '%.{prec}f' % x for a number (sign included, prec <= 100). */
export function fixedNumber(x: number, prec: number): string {
  // integer-valued below 2**53: String() prints every digit exactly (beyond, it prints the shortest repr)
  if (Number.isInteger(x) && x <= 9007199254740992 && x >= -9007199254740992) return (x < 0 || Object.is(x, -0) ? '-' + String(-x) : String(x)) + ZEROS[prec];
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
  return fixed(x, prec);
}

export function nonFinite(x: number): string {
  return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
}

/** Python exponent notation: mantissa with `prec` decimals, exponent with at least 2 digits. */
export function expo(x: number, prec: number, upper = false, alt = false): string {
  if (!Number.isFinite(x)) return upper ? nonFinite(x).toUpperCase() : nonFinite(x);
  let s = x.toExponential(Math.min(prec, 100));
  if (prec + 25 <= 100 && x !== 0) {
    // toExponential breaks exact ties away from zero; CPython rounds half to even
    const ext = Math.abs(x).toExponential(prec + 25);
    const mm = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(ext)!;
    const digits = mm[1] + (mm[2] ?? '');
    if (digits.slice(prec + 1) === '5' + '0'.repeat(24) && Number(digits[prec]) % 2 === 0) {
      const kept = digits.slice(0, prec + 1);
      s = (x < 0 ? '-' : '') + kept[0] + (prec > 0 ? '.' + kept.slice(1) : '') + 'e' + (Number(mm[3]) >= 0 ? '+' : '-') + Math.abs(Number(mm[3]));
    }
  }
  if (Object.is(x, -0)) s = '-' + s;
  const m = /^(-?[\d.]+)e([+-])(\d+)$/.exec(s)!;
  let mant = m[1];
  if (alt && !mant.includes('.')) mant += '.';
  const e = `${upper ? 'E' : 'e'}${m[2]}${m[3].length < 2 ? '0' + m[3] : m[3]}`;
  return mant + e;
}

/** %g / {:g}: `prec` significant digits, trailing zeros dropped unless `alt`. */
export function general(x: number, prec: number, upper = false, alt = false): string {
  if (!Number.isFinite(x)) return upper ? nonFinite(x).toUpperCase() : nonFinite(x);
  if (prec === 0) prec = 1;
  if (x === 0) {
    const z = alt ? '0.' + '0'.repeat(prec - 1) : '0';
    return Object.is(x, -0) ? '-' + z : z;
  }
  const exp = Number(/e([+-]\d+)$/.exec(expo(x, prec - 1))![1]);
  let out: string;
  if (exp >= -4 && exp < prec) {
    out = fixed(x, prec - 1 - exp);
    if (!alt && out.includes('.')) out = out.replace(/\.?0+$/, '');
    if (alt && !out.includes('.')) out += '.';
  } else {
    out = expo(x, prec - 1, upper, alt);
    if (!alt) out = out.replace(/\.?0+(?=[eE])/, '');
  }
  return out;
}

/** repr-style formatting used by str.format with no type but a precision. */
export function reprLike(x: number, prec: number | null, alt = false): string {
  if (alt) {
    // alternate form: like 'g' keeping zeros, but at least one digit after the point
    const out = general(x, prec ?? 17, false, true);
    return prec === null ? floatRepr(x) : out;
  }
  if (prec === null) return floatRepr(x);
  if (!Number.isFinite(x)) return nonFinite(x);
  if (prec === 0) prec = 1;
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const exp = Number(/e([+-]\d+)$/.exec(expo(x, prec - 1))![1]);
  // repr-style: scientific once exp >= p - 1 (unlike 'g', which waits for exp >= p)
  if (exp >= -4 && exp < prec - 1) {
    let out = fixed(x, Math.max(prec - 1 - exp, 0));
    if (out.includes('.')) out = out.replace(/0+$/, '');
    if (out.endsWith('.')) out += '0';
    if (!out.includes('.')) out += '.0';
    return out;
  }
  return expo(x, prec - 1).replace(/\.?0+(?=e)/, '');
}

/** Insert a thousands separator every `every` digits of an integer digit string. */
export function group(digits: string, sep: string, every = 3): string {
  let out = '';
  let n = 0;
  for (let i = digits.length - 1; i >= 0; i--) {
    out = digits[i] + out;
    if (++n % every === 0 && i > 0) out = sep + out;
  }
  return out;
}
