// The builtin filter table of Jinja2 3.1.

import type { FilterFn, TestFn } from './fn.js';
import { htmlFilters } from './html.js';
import { tojson } from './json.js';
import { numberFilters } from './numbers.js';
import { makeSequenceFilters } from './sequences.js';
import { stringFilters } from './strings.js';

export function makeFilters(lookup: { filters: Map<string, FilterFn>; tests: Map<string, TestFn> }): Record<string, FilterFn> {
  return {
    ...stringFilters,
    ...numberFilters,
    ...htmlFilters,
    ...makeSequenceFilters(lookup),
    tojson,
  };
}
