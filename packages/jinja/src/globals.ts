// Template globals of Jinja2: range (bounded), dict, lipsum, cycler, joiner, namespace.

import { LimitExceededError, pyError } from './errors.js';
import { intOf } from './runtime/ops.js';
import { Cycler, Joiner, makeNamespace, PyRange } from './runtime/objects.js';
import type { RenderState } from './runtime/state.js';
import { bindArgs, dflt } from './runtime/args.js';
import { Markup, NativeFunction, dictGet, dictKeys, dictSet, isDict, toList, truthy, typeName } from './runtime/values.js';

function rangeInt(v: unknown): number {
  const i = intOf(v);
  if (i === null) throw pyError('TypeError', `'${typeName(v)}' object cannot be interpreted as an integer`);
  return Number(i);
}

const LOREM = `a ac accumsan ad adipiscing aenean aliquam aliquet amet ante aptent arcu at auctor augue bibendum blandit
class commodo condimentum congue consectetuer consequat conubia convallis cras cubilia cum curabitur curae cursus dapibus
diam dictum dictumst dignissim dis dolor donec dui duis egestas eget eleifend elementum elit enim erat eros est et etiam
eu euismod facilisi facilisis fames faucibus felis fermentum feugiat fringilla fusce gravida habitant habitasse hac
hendrerit hymenaeos iaculis id imperdiet in inceptos integer interdum ipsum justo lacinia lacus laoreet lectus leo libero
ligula litora lobortis lorem luctus maecenas magna magnis malesuada massa mattis mauris metus mi molestie mollis montes
morbi mus nam nascetur natoque nec neque netus nibh nisi nisl non nonummy nostra nulla nullam nunc odio orci ornare
parturient pede pellentesque penatibus per pharetra phasellus placerat platea porta porttitor posuere potenti praesent
pretium primis proin pulvinar purus quam quis quisque rhoncus ridiculus risus rutrum sagittis sapien scelerisque sed
sem semper senectus sit sociis sociosqu sodales sollicitudin suscipit suspendisse taciti tellus tempor tempus tincidunt
torquent tortor tristique turpis ullamcorper ultrices ultricies urna ut varius vehicula vel velit venenatis vestibulum
vitae vivamus viverra volutpat vulputate`.split(/\s+/);

function lipsum(r: RenderState, n: number, html: boolean, min: number, max: number): string {
  const paras: string[] = [];
  const pick = () => LOREM[Math.floor(Math.random() * LOREM.length)];
  r.checkSize(n * max * 8);
  for (let i = 0; i < n; i++) {
    const len = min + Math.floor(Math.random() * (max - min + 1));
    const words: string[] = [];
    let nextCapital = true;
    for (let j = 0; j < len; j++) {
      let w = pick();
      if (nextCapital) {
        w = w[0].toUpperCase() + w.slice(1);
        nextCapital = false;
      }
      if (j < len - 1 && Math.random() < 0.1) {
        w += Math.random() < 0.5 ? ',' : '.';
        nextCapital = w.endsWith('.');
      }
      words.push(w);
    }
    let p = words.join(' ');
    if (!p.endsWith('.')) p = p.replace(/,$/, '') + '.';
    paras.push(html ? `<p>${p}</p>` : p);
  }
  return paras.join(html ? '\n' : '\n\n');
}

export function makeGlobals(): Map<string, unknown> {
  const g = new Map<string, unknown>();
  g.set(
    'range',
    new NativeFunction('range', (r, args, kw) => {
      if (kw && kw.size) throw pyError('TypeError', 'range() takes no keyword arguments');
      if (args.length < 1 || args.length > 3) throw pyError('TypeError', `range expected at least 1 argument, got ${args.length}`);
      let start = 0;
      let stop: number;
      let step = 1;
      if (args.length === 1) stop = rangeInt(args[0]);
      else {
        start = rangeInt(args[0]);
        stop = rangeInt(args[1]);
        if (args.length === 3) step = rangeInt(args[2]);
      }
      if (step === 0) throw pyError('ValueError', 'range() arg 3 must not be zero');
      const rng = new PyRange(start, stop, step);
      if (rng.length > r.limits.maxRange)
        throw new LimitExceededError('range', `Range too big. The sandbox blocks ranges larger than MAX_RANGE (${r.limits.maxRange}).`);
      r.tick(rng.length >>> 4);
      return rng;
    }, 'type'),
  );
  g.set(
    'dict',
    new NativeFunction('dict', (r, args, kw) => {
      const m = new Map<unknown, unknown>();
      if (args.length > 1) throw pyError('TypeError', `dict expected at most 1 argument, got ${args.length}`);
      if (args.length) {
        const src = args[0];
        if (isDict(src)) for (const k of dictKeys(src)) dictSet(m, k, dictGet(src, k));
        else
          for (const pair of toList(src)) {
            const kv = toList(pair);
            if (kv.length !== 2) throw pyError('ValueError', 'dictionary update sequence element has wrong length');
            dictSet(m, kv[0], kv[1]);
          }
      }
      if (kw) for (const [k, v] of kw) m.set(k, v);
      return m;
    }, 'type'),
  );
  g.set(
    'lipsum',
    new NativeFunction('generate_lorem_ipsum', (r, args, kw) => {
      const [n, html, min, max] = bindArgs('generate_lorem_ipsum', args, kw, ['n', 'html', 'min', 'max']);
      const out = lipsum(r, Number(dflt(n, 5)), truthy(dflt(html, true)), Number(dflt(min, 20)), Number(dflt(max, 100)));
      return truthy(dflt(html, true)) ? new Markup(out) : out;
    }, 'function'),
  );
  g.set('cycler', new NativeFunction('Cycler', (r, args) => new Cycler(args.slice()), 'type'));
  g.set(
    'joiner',
    new NativeFunction('Joiner', (r, args, kw) => {
      const [sep] = bindArgs('Joiner', args, kw, ['sep']);
      return new Joiner(dflt(sep, ', '));
    }, 'type'),
  );
  g.set('namespace', new NativeFunction('Namespace', (r, args, kw) => makeNamespace(args, kw), 'type'));
  return g;
}
