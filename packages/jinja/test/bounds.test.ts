// Single expensive operations and memory growth: each must be refused (or finish) quickly, and
// where Python 3.11+ refuses the same thing (int/str conversions past 4,300 digits) with its message.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Environment, LimitExceededError, TemplateRuntimeError, TemplateSyntaxError, markTuple } from '../src/index.ts';

const env = new Environment();
// CI machines are slow and shared: the budget is one second of engine time, so allow a margin around it.
const FAST_MS = 3000;

function run(src: string, ctx: Record<string, unknown> = {}): { out?: string; err?: unknown; ms: number } {
  const t0 = performance.now();
  try {
    const out = env.fromString(src).render(ctx);
    return { out, ms: performance.now() - t0 };
  } catch (err) {
    return { err, ms: performance.now() - t0 };
  }
}

function refused(src: string, kind?: string, ctx: Record<string, unknown> = {}) {
  const r = run(src, ctx);
  assert.ok(r.err instanceof TemplateRuntimeError, `${src.slice(0, 80)}: expected a refusal, got ${r.err ? String(r.err) : `output of ${r.out!.length} chars`}`);
  if (kind) {
    assert.ok(r.err instanceof LimitExceededError, `${src.slice(0, 80)}: expected LimitExceededError(${kind}), got ${String(r.err)}`);
    assert.equal((r.err as LimitExceededError).kind, kind, `${src.slice(0, 80)}: ${String(r.err)}`);
  }
  assert.ok(r.ms < FAST_MS, `${src.slice(0, 80)}: took ${r.ms.toFixed(0)} ms`);
  return r.err as TemplateRuntimeError;
}

function renders(src: string, expected: string, ctx: Record<string, unknown> = {}) {
  const r = run(src, ctx);
  assert.equal(r.err, undefined, `${src.slice(0, 80)}: ${String(r.err)}`);
  assert.equal(r.out, expected);
  assert.ok(r.ms < FAST_MS, `${src.slice(0, 80)}: took ${r.ms.toFixed(0)} ms`);
}

const LIMIT_MSG = 'Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit';

test('int(str) refuses more than 4,300 digits as Python 3.11+, and the int filter falls back like Jinja2', () => {
  // Jinja2: int() raises ValueError → int(float(value)) → inf → OverflowError → the default
  renders("{{ ('9'*1000000)|int }}", '0');
  renders("{{ ('1'*5000)|int(default=7) }}", '7');
  renders("{{ ('0'*5000 + '1')|int(default=7) }}", '1');
  renders("{{ ('9'*4300)|int|string|length }}", '4300');
  renders("{{ ('9'*400)|int|string|length }}", '400');
  renders("{{ ('1_000'*3)|int }}", '100010001000');
  // power-of-two bases have no digit limit in Python; here they are bounded by the integer size limit
  renders("{{ ('f'*3000)|int(base=16) > 5 }}", 'True');
  renders("{{ '0x' ~ 'f'*8|int(base=0) }}", '0xffffffff');
  refused("{{ ('f'*300000)|int(base=16) }}", 'size');
  refused("{{ ('1'*2000000)|int(base=2) }}", 'size');
});

test('str(int) refuses more than 4,300 digits with Python\'s ValueError', () => {
  for (const src of ['{{ 2**20000 }}', '{{ (2**20000)|string }}', '{{ (2**20000)|tojson }}', "{{ '%d' % 10**5000 }}", '{{ [2**20000] }}', "{{ '{}'.format(10**4300) }}"]) {
    const err = refused(src);
    assert.equal(err.message, LIMIT_MSG, src);
    assert.equal((err as { pyClass?: string }).pyClass, 'ValueError', src);
  }
  renders('{{ (10**4300 - 1)|string|length }}', '4300');
  renders('{{ (2**20000) % 7 }}', '4');
  renders("{{ '%x'|format(2**20000)|length }}", '5001');
  renders('{{ [2**20000]|length }}', '1');
});

test('a decimal literal of more than 4,300 digits is a compile error with Python\'s message', () => {
  assert.throws(
    () => env.fromString(`{{ ${'9'.repeat(5000)} }}`),
    (e: unknown) => e instanceof TemplateSyntaxError && /Exceeds the limit \(4300 digits\) for integer string conversion: value has 5000 digits/.test(e.message),
  );
  assert.throws(() => env.fromString(`{{ 0x${'f'.repeat(100_000)} }}`), TemplateSyntaxError);
  renders(`{{ ${'9'.repeat(4300)} > 0 }}`, 'True');
});

test('memory growth is counted: lists extended with themselves, batch fill, repetition, join', () => {
  refused('{% set l = [0] %}{% for i in range(64) %}{% set _ = l.extend(l) %}{% endfor %}{{ l|length }}');
  refused('{% set l = [1]*1000000 %}{% set keep = [] %}{% for i in range(100) %}{% set _ = keep.append(l + l) %}{% endfor %}', 'memory');
  refused('{% set keep = [] %}{% for i in range(100) %}{% set _ = keep.append("x"*9000000) %}{% endfor %}', 'memory');
  refused("{{ [1]|batch(1000000000, fill_with=0)|list|length }}", 'size');
  refused("{{ [1]|batch(9000000, fill_with=0)|list|length }}{{ [1]|batch(9000000, fill_with=0)|list|length }}", 'memory');
  refused("{% set s = 'x'*5000000 %}{% set keep = [] %}{% for i in range(40) %}{% set _ = keep.append([s, s]|join) %}{% endfor %}", 'memory');
  refused("{% set d = {} %}{% set l = range(100000)|list %}{% for i in range(1000) %}{% set _ = d.update({i: l + l}) %}{% endfor %}", 'memory');
  refused("{{ ('ab'*10)|replace('', 'x'*10000000) }}", 'size');
  refused("{{ ('a'*1000000)|replace('a', 'bb'*100) }}", 'size');
  // ordinary templates stay far below the budget
  renders("{% set ns = namespace(s='') %}{% for i in range(2000) %}{% set ns.s = ns.s ~ ('x'*100) ~ ',' %}{% endfor %}{{ ns.s|length }}", '202000');
});

test('filters whose cost grows faster than their input, or with a big constant, are bounded before they run', () => {
  const big = { s: 'lorem ipsum-dolor sit (amet) '.repeat(300_000), a: 'a'.repeat(5_000_000) };
  refused('{{ a|wordwrap(1) }}', undefined, big);
  refused('{{ a|wordwrap(5, wrapstring="\\n\\n\\n") }}', undefined, big);
  refused('{{ s|title }}{{ s|title }}{{ s|title }}', undefined, big);
  refused('{{ s.title() ~ s.swapcase() }}', undefined, big);
  refused('{{ s|urlize }}', undefined, big);
  refused("{{ 'x'|center(2000000000) }}", 'size');
  refused("{{ 'x'.ljust(2000000000) }}", 'size');
  refused("{{ 'x'|indent(100000000) }}", 'size');
  refused("{{ ('a\\n'*100000)|indent(1000) }}", 'size');
  refused("{{ '%2000000000d'|format(1) }}", 'size');
  refused("{{ '%.2000000000f'|format(1.5) }}", 'size');
  refused("{{ '{:>2000000000}'.format(1) }}", 'size');
  refused("{{ ('\\t'*1000000).expandtabs(100) }}", 'size');
  refused("{{ 'ab'*2000000000 }}", 'size');
  refused('{{ range(10**9)|list }}', 'range');
  refused('{% for i in range(100000) %}{{ a|first }}{% endfor %}', undefined, big);
  // the fixed wordwrap gives the same lines as before for long words
  renders("{{ 'abcdefghij klm'|wordwrap(3) }}", 'abc\ndef\nghi\nj\nklm');
  renders("{{ ('a'*20000)|wordwrap(7)|length }}", String(20000 + Math.ceil(20000 / 7) - 1));
});

test('unique over unhashable-by-identity keys (tuples) is charged quadratically', () => {
  refused('{{ l|unique|list|length }}', undefined, { l: Array.from({ length: 200_000 }, (_, i) => markTuple([i, [i]])) });
});
