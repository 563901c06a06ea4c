// '%.Nf' formatting against Python's exact half-even rounding (expected values from CPython),
// through both the one-argument fast path (|format) and the general printf path (%).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Environment } from '../src/index.ts';

const CASES: [number, number, string][] = [
  [0.5, 0, "0"],
  [1.5, 0, "2"],
  [2.5, 0, "2"],
  [-2.5, 0, "-2"],
  [0.125, 2, "0.12"],
  [0.375, 2, "0.38"],
  [-0.125, 2, "-0.12"],
  [12.25, 1, "12.2"],
  [12.35, 1, "12.3"],
  [1.005, 2, "1.00"],
  [43708169460296.63, 6, "43708169460296.632812"],
  [39562082290649.414, 6, "39562082290649.414062"],
  [-49636.08980178833, 17, "-49636.08980178833007812"],
  [-531.6567420959473, 17, "-531.65674209594726562"],
  [2**-80, 79, "0.0000000000000000000000008271806125530276748714086920699628535658121109008789062"],
  [3*2**-79, 78, "0.000000000000000000000004963083675318166049228452152419777121394872665405273438"],
  [2**60, 1, "1152921504606846976.0"],
  [2**53+2, 2, "9007199254740994.00"],
  [123456789012345680000.0, 0, "123456789012345683968"],
  [1e21, 2, "1000000000000000000000.00"],
  [-0.0, 3, "-0.000"],
  [10.0, 1, "10.0"],
  [55.0, 1, "55.0"],
  [1e300, 2, "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160.00"],
];

test("'%.Nf' rounds the exact binary value half to even, like CPython", () => {
  const env = new Environment();
  const fast = env.fromString("{{ ('%.' ~ p ~ 'f')|format(x) }}|{{ '%.*f' % (p, x) }}|{{ '<%.2f>'|format(x) }}");
  for (const [x, p, expected] of CASES) {
    const [a, b] = fast.render({ x, p }).split('|');
    assert.equal(a, expected, `'%.${p}f' % ${x} via |format`);
    assert.equal(b, expected, `'%.${p}f' % ${x} via %`);
  }
  const constFmt = env.fromString("{{ '%.1f'|format(x) }} {{ '%.0f'|format(x) }} {{ 'a%.3fb'|format(x) }}");
  assert.equal(constFmt.render({ x: 0.25 }), '0.2 0 a0.250b');
  assert.equal(constFmt.render({ x: 2.5 }), '2.5 2 a2.500b');
  assert.equal(constFmt.render({ x: -0.05 }), '-0.1 -0 a-0.050b');
  assert.throws(() => constFmt.render({ x: 'x' }), /real number is required, not str/);
});
