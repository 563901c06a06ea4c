// Python 3.11+'s limit on decimal conversions of big integers (sys.get_int_max_str_digits() = 4300):
// both directions are quadratic in CPython, so it refuses them; we refuse the same values with the same messages.

import { pyError } from '../errors.js';

export const MAX_STR_DIGITS = 4300;
/** Bits an integer may grow to before we call it a bomb (arithmetic, parsing). */
export const MAX_INT_BITS = 100_000;
const LIMIT = 10n ** BigInt(MAX_STR_DIGITS);
const HINT = 'use sys.set_int_max_str_digits() to increase the limit';

/** str(int) for an int beyond the safe range; ValueError past 4,300 digits, as Python. */
export function bigDecimal(b: bigint): string {
  if ((b < 0n ? -b : b) >= LIMIT)
    throw pyError('ValueError', `Exceeds the limit (${MAX_STR_DIGITS} digits) for integer string conversion; ${HINT}`);
  return b.toString();
}

/** The ValueError of int(str) with more than 4,300 digits in a base that is not a power of two. */
export function tooManyDigits(n: number): Error {
  return pyError('ValueError', `Exceeds the limit (${MAX_STR_DIGITS} digits) for integer string conversion: value has ${n} digits; ${HINT}`);
}
