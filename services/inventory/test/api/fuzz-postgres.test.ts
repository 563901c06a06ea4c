import { fuzzSuite } from './fuzz-suite.ts';

fuzzSuite('postgres');
