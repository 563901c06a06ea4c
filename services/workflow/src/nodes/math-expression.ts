import type { NodeDefinition } from './api.ts';

/**
 * A safe arithmetic evaluator (no eval): numbers, a/b/c, + - * / // % **,
 * parentheses, comparisons and a few functions. Bounded in length and depth.
 */
const MAX_LENGTH = 2000;
const MAX_DEPTH = 64;

type Tok = { t: 'num'; v: number } | { t: 'id'; v: string } | { t: 'op'; v: string };

const FUNCS: Record<string, (...a: number[]) => number> = {
  abs: Math.abs,
  min: (...a) => (a.length ? Math.min(...a) : NaN),
  max: (...a) => (a.length ? Math.max(...a) : NaN),
  round: (x, d = 0) => {
    // Python rounds half to even.
    const f = 10 ** d;
    const y = x * f;
    const r = Math.round(y);
    return (Math.abs(y % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r) / f;
  },
  floor: Math.floor,
  ceil: Math.ceil,
  sqrt: Math.sqrt,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  log: Math.log,
  exp: Math.exp,
  pow: (a, b) => a ** b,
  int: Math.trunc,
  float: (x) => x,
};
const CONSTS: Record<string, number> = { pi: Math.PI, e: Math.E };

export class ExpressionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ValueError';
  }
}

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  const re = /\s*(?:(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|\/\/|==|!=|<=|>=|[-+*/%(),<>]))/y;
  let pos = 0;
  while (pos < src.length) {
    if (/^\s*$/.test(src.slice(pos))) break;
    re.lastIndex = pos;
    const m = re.exec(src);
    if (!m) throw new ExpressionError(`unexpected character at position ${pos}: ${JSON.stringify(src.slice(pos).trim()[0])}`);
    pos = re.lastIndex;
    if (m[1] !== undefined) out.push({ t: 'num', v: Number(m[1]) });
    else if (m[2] !== undefined) out.push({ t: 'id', v: m[2] });
    else out.push({ t: 'op', v: m[3]! });
  }
  return out;
}

export function evaluate(src: string, vars: Record<string, number>): number {
  if (src.length > MAX_LENGTH) throw new ExpressionError(`expression longer than ${MAX_LENGTH} characters`);
  const toks = tokenize(src);
  let i = 0;
  let depth = 0;
  const peek = () => toks[i];
  const isOp = (v: string) => peek()?.t === 'op' && peek()!.v === v;
  const expect = (v: string) => {
    if (!isOp(v)) throw new ExpressionError(`expected '${v}'`);
    i++;
  };
  const enter = () => {
    if (++depth > MAX_DEPTH) throw new ExpressionError(`expression nested deeper than ${MAX_DEPTH}`);
  };
  const comparison = (): number => {
    let l = additive();
    while (peek()?.t === 'op' && ['<', '>', '<=', '>=', '==', '!='].includes(peek()!.v as string)) {
      const op = toks[i++]!.v as string;
      const r = additive();
      l = Number(op === '<' ? l < r : op === '>' ? l > r : op === '<=' ? l <= r : op === '>=' ? l >= r : op === '==' ? l === r : l !== r);
    }
    return l;
  };
  const additive = (): number => {
    let l = term();
    while (isOp('+') || isOp('-')) {
      const op = toks[i++]!.v;
      const r = term();
      l = op === '+' ? l + r : l - r;
    }
    return l;
  };
  const term = (): number => {
    let l = unary();
    while (isOp('*') || isOp('/') || isOp('//') || isOp('%')) {
      const op = toks[i++]!.v;
      const r = unary();
      if ((op === '/' || op === '//' || op === '%') && r === 0) throw new ExpressionError('division by zero');
      l = op === '*' ? l * r : op === '/' ? l / r : op === '//' ? Math.floor(l / r) : l - r * Math.floor(l / r);
    }
    return l;
  };
  const unary = (): number => {
    if (isOp('-') || isOp('+')) {
      const op = toks[i++]!.v;
      enter();
      const v = unary();
      depth--;
      return op === '-' ? -v : v;
    }
    return power();
  };
  const power = (): number => {
    const base = atom();
    if (isOp('**')) {
      i++;
      enter();
      const exp = unary();
      depth--;
      return base ** exp;
    }
    return base;
  };
  const atom = (): number => {
    const tok = toks[i++];
    if (!tok) throw new ExpressionError('unexpected end of expression');
    if (tok.t === 'num') return tok.v;
    if (tok.t === 'op' && tok.v === '(') {
      enter();
      const v = comparison();
      depth--;
      expect(')');
      return v;
    }
    if (tok.t === 'id') {
      if (isOp('(')) {
        const f = FUNCS[tok.v];
        if (!f) throw new ExpressionError(`unknown function ${tok.v}`);
        i++;
        enter();
        const args: number[] = [];
        if (!isOp(')')) {
          args.push(comparison());
          while (isOp(',')) {
            i++;
            args.push(comparison());
          }
        }
        depth--;
        expect(')');
        return f(...args);
      }
      if (Object.hasOwn(vars, tok.v)) return vars[tok.v]!;
      if (Object.hasOwn(CONSTS, tok.v)) return CONSTS[tok.v]!;
      throw new ExpressionError(`name '${tok.v}' is not defined`);
    }
    throw new ExpressionError(`unexpected '${tok.v}'`);
  };
  if (toks.length === 0) throw new ExpressionError('empty expression');
  const v = comparison();
  if (i < toks.length) throw new ExpressionError(`unexpected '${(toks[i] as { v: unknown }).v}'`);
  return v;
}

export const mathNodes: NodeDefinition[] = [
  {
    name: 'MathExpression',
    displayName: 'Math Expression',
    description: 'Evaluates an arithmetic expression over a, b and c (no code execution).',
    category: 'utils/math',
    inputs: {
      required: { expression: ['STRING', { multiline: false, default: 'a + b' }] },
      optional: { a: ['INT,FLOAT', { forceInput: true }], b: ['INT,FLOAT', { forceInput: true }], c: ['INT,FLOAT', { forceInput: true }] },
    },
    outputs: ['FLOAT', 'INT'],
    execute: ({ expression, a, b, c }) => {
      const vars: Record<string, number> = {};
      for (const [k, v] of Object.entries({ a, b, c })) if (typeof v === 'number') vars[k] = v;
      const v = evaluate(String(expression), vars);
      if (!Number.isFinite(v)) throw new ExpressionError(`expression result is not finite: ${v}`);
      return [v, Math.trunc(v)];
    },
  },
];
