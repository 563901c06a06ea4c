// Attack suite: hostile templates must be refused or bounded, and never reach the host.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Environment,
  LimitExceededError,
  SecurityError,
  TemplateRuntimeError,
  UndefinedError,
} from '../src/index.ts';

const env = new Environment();

function render(src: string, ctx: Record<string, unknown> = {}): string {
  return env.fromString(src).render(ctx);
}

/** Runs the template and asserts it either throws `cls` or (when allowed) renders `output`, within `ms`. */
function outcome(src: string, expect: { throws?: new (...a: any[]) => Error; output?: string; ms?: number }, ctx: Record<string, unknown> = {}) {
  const start = performance.now();
  let out: string | undefined;
  let err: unknown;
  try {
    out = render(src, ctx);
  } catch (e) {
    err = e;
  }
  const elapsed = performance.now() - start;
  if (expect.throws) {
    assert.ok(err instanceof expect.throws, `${src}: expected ${expect.throws.name}, got ${err instanceof Error ? `${err.name}: ${err.message}` : `output ${JSON.stringify(out)}`}`);
  } else {
    assert.equal(err, undefined, `${src}: unexpected ${String(err)}`);
    if (expect.output !== undefined) assert.equal(out, expect.output);
  }
  assert.ok(elapsed < (expect.ms ?? 1500), `${src}: took ${elapsed.toFixed(0)} ms`);
  return { out, err };
}

const host = {
  data: { name: 'x', nested: { a: 1 } },
  list: [1, 2, 3],
  fn: () => 'called',
  date: new Date(0),
  klass: class Secret {
    static token = 's3cret';
  },
};

test('JavaScript prototype / constructor escapes yield Undefined, never host objects', () => {
  outcome("{{ ''.constructor }}", { output: '' });
  outcome("{{ ''.constructor.constructor('return process')() }}", { throws: UndefinedError });
  outcome('{{ data.__proto__ }}', { output: '' }, host);
  outcome('{{ data.__proto__.polluted }}', { throws: UndefinedError }, host);
  outcome("{{ data['__proto__'] }}", { output: '' }, host);
  outcome('{{ data.constructor }}', { output: '' }, host);
  outcome("{{ data['constructor']['constructor'] }}", { throws: UndefinedError }, host);
  outcome('{{ list.constructor }}', { output: '' }, host);
  outcome('{{ list.map }}', { output: '' }, host);
  outcome('{{ list.prototype }}', { output: '' }, host);
  outcome('{{ fn.constructor }}', { output: '' }, host);
  outcome('{{ fn.call }}', { output: '' }, host);
  outcome('{{ fn.apply }}', { output: '' }, host);
  outcome('{{ fn.bind }}', { output: '' }, host);
  outcome('{{ date.getTime }}', { output: '' }, host);
  outcome('{{ klass.token }}', { output: '' }, host);
  outcome('{{ this }}|{{ globalThis }}|{{ process }}|{{ require }}|{{ window }}', { output: '||||' });
  outcome('{{ process.env }}', { throws: UndefinedError });
  outcome('{{ range.constructor }}', { output: '' });
  outcome('{{ cycler.prototype }}', { output: '' });
  outcome("{{ (1).constructor }}|{{ none.constructor }}|{{ true.valueOf }}", { output: '||' });
  outcome('{{ loop }}', { output: '' });
  outcome('{% for x in [1] %}{{ loop.constructor }}{% endfor %}', { output: '' });
  outcome("{% set ns = namespace() %}{{ ns.constructor }}{{ ns.attrs }}", { output: '' });
  outcome("{% macro m() %}{% endmacro %}{{ m.constructor }}{{ m.def }}{{ m.closure }}", { output: '' });
});

test('prototype pollution through mutating methods stays inside the template data', () => {
  const ctx = { d: {} as Record<string, unknown> };
  render("{{ d.update({'__proto__': {'polluted': 1}}) }}{{ d.setdefault('constructor', 1) }}", ctx);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.getPrototypeOf(ctx.d), Object.prototype);
  assert.ok(Object.hasOwn(ctx.d, '__proto__'), 'stored as an own data key');
});

test('Python dunder escapes raise SecurityError', () => {
  outcome("{{ ''.__class__.__mro__[1].__subclasses__() }}", { throws: SecurityError });
  outcome('{{ cycler.__init__.__globals__ }}', { throws: SecurityError });
  outcome('{{ joiner.__init__.__globals__.os }}', { throws: SecurityError });
  outcome('{{ namespace.__init__.__globals__ }}', { throws: SecurityError });
  outcome('{{ lipsum.__globals__.os }}', { throws: SecurityError });
  outcome('{{ range.__self__.__import__ }}', { throws: SecurityError });
  outcome('{{ [].__class__.__base__.__subclasses__() }}', { throws: SecurityError });
  outcome('{{ {}.__class__.__bases__ }}', { throws: SecurityError });
  outcome('{{ data.__class__.__mro__ }}', { throws: SecurityError }, host);
  outcome('{{ cycler.mro() }}', { throws: SecurityError });
  outcome('{{ x.__class__.__mro__ }}', { throws: SecurityError });
  outcome("{{ ''|attr('__class__')|attr('__mro__') }}", { output: '' }); // as Jinja2: attr() of an undefined dunder is undefined
  outcome("{{ (''|attr('__class__')).x }}", { throws: SecurityError });
  // rendering an unsafe attribute prints nothing, as in Jinja2
  outcome("{{ ''.__class__ }}", { output: '' });
});

test('format-string attacks go through the sandbox', () => {
  outcome("{{ '{0.__class__}'.format('') }}", { output: '' });
  outcome("{{ '{0.__class__.__mro__}'.format('') }}", { throws: SecurityError });
  outcome("{{ '{0.__globals__}'.format(cycler.__init__) }}", { throws: SecurityError });
  outcome("{{ '{0.constructor.constructor}'.format('') }}", { throws: UndefinedError });
  outcome("{{ '{0[__proto__]}'.format(data) }}", { output: '' }, host);
  outcome("{{ '{0.__class__}'.format_map({}) }}", { throws: TemplateRuntimeError });
  outcome("{{ '%(constructor)s' % data }}", { throws: TemplateRuntimeError }, host);
  outcome("{{ '{:>99999999}'.format('a') }}", { throws: LimitExceededError });
});

test('huge ranges are refused like OverflowError', () => {
  outcome('{{ range(100000000) }}', { throws: LimitExceededError });
  outcome('{{ range(0, 10**12, 2)|list }}', { throws: LimitExceededError });
  outcome('{{ range(100000)|length }}', { output: '100000' });
  try {
    render('{{ range(100001) }}');
  } catch (e) {
    assert.ok(e instanceof LimitExceededError && e.kind === 'range');
    assert.match((e as Error).message, /MAX_RANGE \(100000\)/);
  }
});

test('nested loops and step bombs stop on the loop/fuel limits within ~1 s', () => {
  const { err } = outcome('{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}', { throws: LimitExceededError });
  assert.ok(['loop', 'fuel', 'time'].includes((err as LimitExceededError).kind));
  outcome('{% for a in range(100) %}{% for b in range(100) %}{% for c in range(100) %}{{ a }}{% endfor %}{% endfor %}{% endfor %}', {
    throws: LimitExceededError,
  });
  // data-driven work: sorting/mapping huge lists is charged to the fuel budget
  outcome("{% set l = range(100000)|list %}{% for i in range(200) %}{{ l|sort|length }}{% endfor %}", { throws: LimitExceededError });
  // a custom, tighter budget
  const tight = new Environment({ limits: { maxLoopIterations: 10 } });
  assert.throws(() => tight.fromString('{% for i in range(11) %}{% endfor %}').render({}), LimitExceededError);
  assert.equal(tight.fromString('{% for i in range(10) %}{{ i }}{% endfor %}').render({}), '0123456789');
});

test('deep recursion is bounded', () => {
  outcome('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}', { throws: LimitExceededError });
  outcome('{% for x in [[1]] recursive %}{{ loop([x]) }}{% endfor %}', { throws: LimitExceededError });
  // deeply nested expressions are rejected at compile time instead of overflowing the stack
  assert.throws(() => env.fromString('{{ ' + '('.repeat(5000) + '1' + ')'.repeat(5000) + ' }}'), /nested too deeply/);
  assert.throws(() => env.fromString('{{ ' + '-'.repeat(5000) + '1 }}'), /nested too deeply/);
  assert.throws(() => env.fromString('{% if 1 %}'.repeat(3000) + '{% endif %}'.repeat(3000)), /nested too deeply/);
});

test('output and memory bombs are refused', () => {
  outcome("{{ 'a' * 10**9 }}", { throws: LimitExceededError });
  outcome("{{ ('a' * 10**9)|length }}", { throws: LimitExceededError });
  outcome("{{ [1] * 10**9 }}", { throws: LimitExceededError });
  outcome("{{ 10 ** (10 ** 10) }}", { throws: LimitExceededError });
  outcome("{{ 2 ** 1000000 }}", { throws: LimitExceededError });
  outcome("{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", { throws: LimitExceededError });
  outcome("{% set s = 'ab' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}", { output: '2' });
  outcome("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", { throws: LimitExceededError });
  outcome("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", { throws: LimitExceededError });
  outcome("{{ (['x' * 100000] * 100000)|join }}", { throws: LimitExceededError });
  outcome("{% set l = [] %}{% for i in range(100000) %}{{ l.append('x' * 1000) }}{% endfor %}{{ l|join|length }}", { throws: LimitExceededError });
  outcome("{{ 'x'|center(10**9) }}|{{ 'x'.ljust(10**9) }}", { throws: LimitExceededError });
  outcome("{{ ' '.join(['a'] * 10**8) }}", { throws: LimitExceededError });
  outcome("{{ lipsum(10**6) }}", { throws: LimitExceededError });
});

test('self-referencing containers do not hang', () => {
  outcome('{% set l = [] %}{{ l.append(l) }}{{ l }}', { output: 'None[[...]]' });
  outcome('{% set l = [] %}{{ l.append(l) }}{{ l|tojson }}', { throws: TemplateRuntimeError });
});

test('host functions are only reachable when the host passes them, and get no `this`', () => {
  let seenThis: unknown = 'unset';
  const ctx = {
    f: function (this: unknown) {
      seenThis = this;
      return 'ok';
    },
  };
  assert.equal(render('{{ f() }}', ctx), 'ok');
  assert.equal(seenThis, undefined);
});

test('errors thrown inside the engine never escape as raw JS errors', () => {
  const e = new Environment().addFilter('boom', () => {
    throw new Error('host failure');
  });
  assert.throws(() => e.fromString('{{ 1|boom }}').render({}), TemplateRuntimeError);
});
