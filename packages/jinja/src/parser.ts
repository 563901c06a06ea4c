// Recursive-descent parser following Jinja2's grammar and precedence
// (including its quirks, e.g. `-2**2` is `(-2)**2` and filters bind tighter than unary minus's operand).

import type { CallArgs, Expr, FilterExpr, Stmt } from './ast.js';
import { TemplateSyntaxError } from './errors.js';
import type { Token } from './lexer.js';

const MAX_NESTING = 200;

const COMPARE_OPS = new Set(['==', '!=', '<', '<=', '>', '>=']);

function describe(t: Token): string {
  switch (t.t) {
    case 'name':
      return t.v;
    case 'op':
      return t.v;
    case 'eof':
      return 'end of template';
    case 'var_begin':
      return 'begin of print statement';
    case 'var_end':
      return 'end of print statement';
    case 'block_begin':
      return 'begin of statement block';
    case 'block_end':
      return 'end of statement block';
    case 'int':
      return 'integer';
    default:
      return t.t;
  }
}

function q(s: string): string {
  return s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s}'`;
}

export class Parser {
  private i = 0;
  private depth = 0;
  /** Stack of end-tag sets we are inside, for "Jinja was looking for" messages. */
  private endTokenStack: string[][] = [];
  private tagStack: string[] = [];
  private readonly blockNames = new Set<string>();

  constructor(private readonly toks: Token[]) {}

  private get cur(): Token {
    return this.toks[this.i];
  }
  private look(n = 1): Token {
    return this.toks[Math.min(this.i + n, this.toks.length - 1)];
  }
  private next(): Token {
    const t = this.toks[this.i];
    if (t.t !== 'eof') this.i++;
    return t;
  }
  fail(msg: string, line = this.cur.line): never {
    throw new TemplateSyntaxError(msg, line);
  }
  private isOp(v: string, t = this.cur): boolean {
    return t.t === 'op' && t.v === v;
  }
  private isName(v: string, t = this.cur): boolean {
    return t.t === 'name' && t.v === v;
  }
  private skipOp(v: string): boolean {
    if (this.isOp(v)) {
      this.next();
      return true;
    }
    return false;
  }
  private skipName(v: string): boolean {
    if (this.isName(v)) {
      this.next();
      return true;
    }
    return false;
  }
  private expectOp(v: string): Token {
    if (!this.isOp(v)) this.failExpected(`'${v}'`);
    return this.next();
  }
  private expectType(t: Token['t'], what: string): Token {
    if (this.cur.t !== t) this.failExpected(what);
    return this.next();
  }
  private expectName(v?: string): Token {
    if (this.cur.t !== 'name' || (v !== undefined && this.cur.v !== v)) this.failExpected(v ? `'${v}'` : 'name');
    return this.next();
  }
  private failExpected(what: string): never {
    if (this.cur.t === 'eof') this.fail(`unexpected end of template, expected ${what}.`);
    this.fail(`expected token ${what}, got ${q(describe(this.cur))}`);
  }

  // ---------- statements ----------

  parseTemplate(): Stmt[] {
    const body = this.subparse(null);
    return body;
  }

  private subparse(endTokens: string[] | null): Stmt[] {
    const body: Stmt[] = [];
    if (endTokens) this.endTokenStack.push(endTokens);
    try {
      for (;;) {
        const t = this.cur;
        if (t.t === 'data') {
          this.next();
          body.push({ k: 'Data', line: t.line, text: t.v });
        } else if (t.t === 'var_begin') {
          this.next();
          const node = this.parseTuple({ withCondexpr: true });
          body.push({ k: 'Output', line: t.line, node });
          this.expectType('var_end', "'end of print statement'");
        } else if (t.t === 'block_begin') {
          this.next();
          if (endTokens && this.cur.t === 'name' && endTokens.includes(this.cur.v)) return body;
          body.push(...this.parseStatement());
          this.expectType('block_end', "'end of statement block'");
        } else if (t.t === 'eof') {
          if (endTokens) this.failUnknownTag(null);
          return body;
        } else {
          this.fail(`unexpected ${q(describe(t))}`);
        }
      }
    } finally {
      if (endTokens) this.endTokenStack.pop();
    }
  }

  private failUnknownTag(name: string | null): never {
    const expected = this.endTokenStack.length ? this.endTokenStack[this.endTokenStack.length - 1] : null;
    let msg = name === null ? 'Unexpected end of template.' : `Encountered unknown tag ${q(name)}.`;
    if (expected) {
      const list = expected.map((e) => q(e));
      const words = list.join(' or ');
      msg += ` Jinja was looking for the following tags: ${words}.`;
      const inner = this.tagStack[this.tagStack.length - 1];
      if (inner) msg += ` The innermost block that needs to be closed is ${q(inner)}.`;
    }
    this.fail(msg);
  }

  private parseStatements(endTokens: string[], dropNeedle = false): Stmt[] {
    // the tag name's remaining tokens: expect end of block
    this.skipOp(':');
    this.expectType('block_end', "'end of statement block'");
    const body = this.subparse(endTokens);
    if (this.cur.t === 'eof') this.failUnknownTag(null);
    if (dropNeedle) this.next();
    return body;
  }

  private parseStatement(): Stmt[] {
    return this.parseStatementInner();
  }

  private parseStatementInner(): Stmt[] | never {
    const t = this.cur;
    if (t.t !== 'name') this.fail('tag name expected');
    if (++this.depth > MAX_NESTING) this.fail('template nested too deeply');
    this.tagStack.push(t.v);
    let popTag = true;
    try {
      switch (t.v) {
        case 'for':
          return [this.parseFor()];
        case 'if':
          return [this.parseIf()];
        case 'set':
          return [this.parseSet()];
        case 'with':
          return [this.parseWith()];
        case 'macro':
          return [this.parseMacro()];
        case 'call':
          return [this.parseCallBlock()];
        case 'filter':
          return [this.parseFilterBlock()];
        case 'block':
          return [this.parseBlock()];
        case 'autoescape': {
          this.next();
          const value = this.parseExpression();
          const body = this.parseStatements(['endautoescape'], true);
          return [{ k: 'Autoescape', line: t.line, value, body }];
        }
        case 'print': {
          this.next();
          const node = this.parseTuple({ withCondexpr: true });
          return [{ k: 'Output', line: t.line, node }];
        }
        case 'extends':
        case 'include':
        case 'import':
        case 'from': {
          this.next();
          const template = this.parseExpression();
          while (this.cur.t !== 'block_end' && this.cur.t !== 'eof') this.next();
          return [{ k: 'Unsupported', line: t.line, what: t.v, template }];
        }
        default:
          popTag = false;
          this.tagStack.pop();
          return this.failUnknownTag(t.v);
      }
    } finally {
      this.depth--;
      if (popTag) this.tagStack.pop();
    }
  }

  private parseFor(): Stmt {
    const line = this.next().line;
    const target = this.parseAssignTarget({ extraEnd: ['in'] });
    this.expectName('in');
    const iter = this.parseTuple({ withCondexpr: false, extraEnd: ['recursive'] });
    let test: Expr | null = null;
    if (this.skipName('if')) test = this.parseExpression();
    const recursive = this.skipName('recursive');
    const body = this.parseStatements(['endfor', 'else']);
    let else_: Stmt[] = [];
    if (this.next().v !== 'endfor') else_ = this.parseStatements(['endfor'], true);
    return { k: 'For', line, target, iter, body, else_, test, recursive };
  }

  private parseIf(): Stmt {
    const line = this.next().line;
    const test = this.parseTuple({ withCondexpr: false });
    const body = this.parseStatements(['elif', 'else', 'endif']);
    const tok = this.next();
    let else_: Stmt[] = [];
    if (tok.v === 'elif') {
      this.i--; // let the nested parseIf consume the `elif` name as its tag
      this.toks[this.i] = { ...this.toks[this.i], v: 'if' };
      this.tagStack.push('if');
      try {
        else_ = [this.parseIf()];
      } finally {
        this.tagStack.pop();
      }
      return { k: 'If', line, test, body, else_ };
    }
    if (tok.v === 'else') else_ = this.parseStatements(['endif'], true);
    return { k: 'If', line, test, body, else_ };
  }

  private parseSet(): Stmt {
    const line = this.next().line;
    const target = this.parseAssignTarget({ withNamespace: true });
    if (this.skipOp('=')) {
      const node = this.parseTuple({ withCondexpr: true });
      return { k: 'Assign', line, target, node };
    }
    const filter = this.parseFilter(null) as FilterExpr | null;
    const body = this.parseStatements(['endset'], true);
    return { k: 'AssignBlock', line, target, filter, body };
  }

  private parseWith(): Stmt {
    const line = this.next().line;
    const targets: Expr[] = [];
    const values: Expr[] = [];
    while (this.cur.t !== 'block_end') {
      if (targets.length) this.expectOp(',');
      targets.push(this.parseAssignTarget({}));
      this.expectOp('=');
      values.push(this.parseExpression());
    }
    const body = this.parseStatements(['endwith'], true);
    return { k: 'With', line, targets, values, body };
  }

  private parseSignature(): { params: string[]; defaults: Expr[] } {
    const params: string[] = [];
    const defaults: Expr[] = [];
    this.expectOp('(');
    while (!this.isOp(')')) {
      if (params.length) this.expectOp(',');
      const name = this.parseAssignTarget({ nameOnly: true }) as { name: string };
      if (params.includes(name.name)) this.fail(`duplicate argument '${name.name}' in function definition`);
      if (this.skipOp('=')) defaults.push(this.parseExpression());
      else if (defaults.length) this.fail('non-default argument follows default argument');
      params.push(name.name);
    }
    this.expectOp(')');
    const ci = params.indexOf('caller');
    if (ci >= 0 && ci < params.length - defaults.length)
      this.fail('When defining macros or call blocks the special "caller" argument must be omitted or be given a default.');
    return { params, defaults };
  }

  private parseMacro(): Stmt {
    const line = this.next().line;
    const name = this.parseAssignTarget({ nameOnly: true }) as { name: string };
    const { params, defaults } = this.parseSignature();
    const body = this.parseStatements(['endmacro'], true);
    return { k: 'Macro', line, name: name.name, params, defaults, body };
  }

  private parseCallBlock(): Stmt {
    const line = this.next().line;
    let sig: { params: string[]; defaults: Expr[] } = { params: [], defaults: [] };
    if (this.isOp('(')) sig = this.parseSignature();
    const call = this.parseExpression();
    if (call.k !== 'Call') this.fail('expected call', line);
    const body = this.parseStatements(['endcall'], true);
    return { k: 'CallBlock', line, call, params: sig.params, defaults: sig.defaults, body };
  }

  private parseFilterBlock(): Stmt {
    const line = this.next().line;
    const filter = this.parseFilter(null, true) as FilterExpr;
    const body = this.parseStatements(['endfilter'], true);
    return { k: 'FilterBlock', line, filter, body };
  }

  private parseBlock(): Stmt {
    const line = this.next().line;
    const name = this.expectName().v as string;
    if (this.blockNames.has(name)) this.fail(`block '${name}' defined twice`, line);
    this.blockNames.add(name);
    const scoped = this.skipName('scoped');
    this.skipName('required');
    if (this.isOp('-')) this.fail('Block names in Jinja have to be valid Python identifiers and may not contain hyphens, use an underscore instead.');
    const body = this.parseStatements(['endblock'], true);
    if (this.cur.t === 'name') {
      if (this.cur.v !== name) this.fail(`mismatching name for block: ${q(this.cur.v)} does not match ${q(name)}`);
      this.next();
    }
    return { k: 'Block', line, name, body, scoped };
  }

  private parseAssignTarget(o: { withTuple?: boolean; nameOnly?: boolean; extraEnd?: string[]; withNamespace?: boolean }): Expr {
    const line = this.cur.line;
    let target: Expr;
    if (o.withNamespace && this.look(1).t === 'op' && this.look(1).v === '.') {
      const ns = this.expectName();
      this.next();
      const attr = this.expectName();
      return { k: 'NSRef', line, name: ns.v, attr: attr.v };
    }
    if (o.nameOnly) {
      const t = this.expectName();
      target = { k: 'Name', line, name: t.v };
    } else if (o.withTuple !== false) {
      target = this.parseTuple({ simplified: true, extraEnd: o.extraEnd });
    } else {
      target = this.parsePrimary();
    }
    this.checkAssignable(target);
    return target;
  }

  private checkAssignable(t: Expr): void {
    if (t.k === 'Name') {
      if (['true', 'false', 'none', 'True', 'False', 'None'].includes(t.name)) this.fail(`can't assign to ${q('const')}`, t.line);
      return;
    }
    if (t.k === 'Tuple') {
      for (const item of t.items) this.checkAssignable(item);
      return;
    }
    this.fail(`can't assign to ${q(t.k.toLowerCase())}`, t.line);
  }

  // ---------- expressions ----------

  private isTupleEnd(extra?: string[]): boolean {
    const t = this.cur;
    if (t.t === 'var_end' || t.t === 'block_end' || t.t === 'eof' || this.isOp(')')) return true;
    if (extra && t.t === 'name' && extra.includes(t.v)) return true;
    return false;
  }

  parseTuple(o: { simplified?: boolean; withCondexpr?: boolean; extraEnd?: string[]; explicitParens?: boolean }): Expr {
    const line = this.cur.line;
    const parse = o.simplified
      ? () => this.parsePrimary()
      : o.withCondexpr === false
        ? () => this.parseExpression(false)
        : () => this.parseExpression(true);
    const items: Expr[] = [];
    let isTuple = false;
    for (;;) {
      if (items.length) this.expectOp(',');
      if (this.isTupleEnd(o.extraEnd)) break;
      items.push(parse());
      if (this.isOp(',')) isTuple = true;
      else break;
    }
    if (!isTuple) {
      if (items.length) return items[0];
      if (!o.explicitParens) this.fail(`Expected an expression, got ${q(describe(this.cur))}`);
    }
    return { k: 'Tuple', line, items };
  }

  parseExpression(withCondexpr = true): Expr {
    if (++this.depth > MAX_NESTING) this.fail('expression nested too deeply');
    try {
      return withCondexpr ? this.parseCondexpr() : this.parseOr();
    } finally {
      this.depth--;
    }
  }

  private parseCondexpr(): Expr {
    const line = this.cur.line;
    let expr1 = this.parseOr();
    while (this.skipName('if')) {
      const test = this.parseOr();
      const expr2 = this.skipName('else') ? this.parseCondexpr() : null;
      expr1 = { k: 'CondExpr', line, test, expr1, expr2 };
    }
    return expr1;
  }

  private parseOr(): Expr {
    const line = this.cur.line;
    let left = this.parseAnd();
    while (this.skipName('or')) left = { k: 'Or', line, left, right: this.parseAnd() };
    return left;
  }

  private parseAnd(): Expr {
    const line = this.cur.line;
    let left = this.parseNot();
    while (this.skipName('and')) left = { k: 'And', line, left, right: this.parseNot() };
    return left;
  }

  private parseNot(): Expr {
    if (this.isName('not')) {
      const line = this.next().line;
      if (++this.depth > MAX_NESTING) this.fail('expression nested too deeply');
      try {
        return { k: 'Unary', line, op: 'not', node: this.parseNot() };
      } finally {
        this.depth--;
      }
    }
    return this.parseCompare();
  }

  private parseCompare(): Expr {
    const line = this.cur.line;
    const expr = this.parseMath1();
    const ops: [string, Expr][] = [];
    for (;;) {
      const t = this.cur;
      if (t.t === 'op' && COMPARE_OPS.has(t.v)) {
        this.next();
        ops.push([t.v, this.parseMath1()]);
      } else if (this.skipName('in')) {
        ops.push(['in', this.parseMath1()]);
      } else if (this.isName('not') && this.isName('in', this.look(1))) {
        this.next();
        this.next();
        ops.push(['notin', this.parseMath1()]);
      } else break;
    }
    return ops.length ? { k: 'Compare', line, expr, ops } : expr;
  }

  private parseMath1(): Expr {
    const line = this.cur.line;
    let left = this.parseConcat();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.next().v;
      left = { k: 'BinOp', line, op, left, right: this.parseConcat() };
    }
    return left;
  }

  private parseConcat(): Expr {
    const line = this.cur.line;
    const nodes = [this.parseMath2()];
    while (this.skipOp('~')) nodes.push(this.parseMath2());
    return nodes.length === 1 ? nodes[0] : { k: 'Concat', line, nodes };
  }

  private parseMath2(): Expr {
    const line = this.cur.line;
    let left = this.parsePow();
    while (this.isOp('*') || this.isOp('/') || this.isOp('//') || this.isOp('%')) {
      const op = this.next().v;
      left = { k: 'BinOp', line, op, left, right: this.parsePow() };
    }
    return left;
  }

  private parsePow(): Expr {
    const line = this.cur.line;
    let left = this.parseUnary();
    while (this.skipOp('**')) left = { k: 'BinOp', line, op: '**', left, right: this.parseUnary() };
    return left;
  }

  private parseUnary(withFilter = true): Expr {
    const line = this.cur.line;
    if (++this.depth > MAX_NESTING) this.fail('expression nested too deeply');
    try {
      let node: Expr;
      if (this.isOp('-') || this.isOp('+')) {
        const op = this.next().v as '-' | '+';
        node = { k: 'Unary', line, op, node: this.parseUnary(false) };
      } else node = this.parsePrimary();
      node = this.parsePostfix(node);
      if (withFilter) node = this.parseFilterExpr(node);
      return node;
    } finally {
      this.depth--;
    }
  }

  private parsePrimary(): Expr {
    const t = this.cur;
    const line = t.line;
    if (t.t === 'name') {
      this.next();
      if (t.v === 'true' || t.v === 'True') return { k: 'Const', line, value: true };
      if (t.v === 'false' || t.v === 'False') return { k: 'Const', line, value: false };
      if (t.v === 'none' || t.v === 'None') return { k: 'Const', line, value: null };
      return { k: 'Name', line, name: t.v };
    }
    if (t.t === 'string') {
      this.next();
      let s = t.v as string;
      while (this.cur.t === 'string') s += this.next().v;
      return { k: 'Const', line, value: s };
    }
    if (t.t === 'int') {
      this.next();
      return { k: 'Const', line, value: t.v };
    }
    if (t.t === 'float') {
      this.next();
      return { k: 'Const', line, value: { float: t.v } };
    }
    if (this.isOp('(')) {
      this.next();
      const node = this.parseTuple({ explicitParens: true });
      this.expectOp(')');
      return node;
    }
    if (this.isOp('[')) return this.parseList();
    if (this.isOp('{')) return this.parseDict();
    if (t.t === 'eof') this.fail('unexpected end of template');
    this.fail(`unexpected ${q(describe(t))}`);
  }

  private parseList(): Expr {
    const line = this.expectOp('[').line;
    const items: Expr[] = [];
    while (!this.isOp(']')) {
      if (items.length) this.expectOp(',');
      if (this.isOp(']')) break;
      items.push(this.parseExpression());
    }
    this.expectOp(']');
    return { k: 'List', line, items };
  }

  private parseDict(): Expr {
    const line = this.expectOp('{').line;
    const pairs: [Expr, Expr][] = [];
    while (!this.isOp('}')) {
      if (pairs.length) this.expectOp(',');
      if (this.isOp('}')) break;
      const key = this.parseExpression();
      this.expectOp(':');
      pairs.push([key, this.parseExpression()]);
    }
    this.expectOp('}');
    return { k: 'Dict', line, pairs };
  }

  private parsePostfix(node: Expr): Expr {
    for (;;) {
      if (this.isOp('.') || this.isOp('[')) node = this.parseSubscript(node);
      else if (this.isOp('(')) node = this.parseCall(node);
      else return node;
    }
  }

  private parseFilterExpr(node: Expr): Expr {
    for (;;) {
      if (this.isOp('|')) node = this.parseFilter(node)!;
      else if (this.isName('is')) node = this.parseTest(node);
      else if (this.isOp('(')) node = this.parseCall(node);
      else return node;
    }
  }

  private parseSubscript(node: Expr): Expr {
    const t = this.next();
    const line = t.line;
    if (t.v === '.') {
      const a = this.cur;
      if (a.t === 'name') {
        this.next();
        return { k: 'Getattr', line, obj: node, attr: a.v };
      }
      if (a.t === 'int') {
        this.next();
        return { k: 'Getitem', line, obj: node, arg: { k: 'Const', line, value: a.v } };
      }
      this.fail('expected name or number');
    }
    const args: Expr[] = [];
    while (!this.isOp(']')) {
      if (args.length) this.expectOp(',');
      args.push(this.parseSubscribed());
    }
    this.expectOp(']');
    const arg: Expr = args.length === 1 ? args[0] : { k: 'Tuple', line, items: args };
    return { k: 'Getitem', line, obj: node, arg };
  }

  private parseSubscribed(): Expr {
    const line = this.cur.line;
    const parts: (Expr | null)[] = [];
    if (this.isOp(':')) {
      this.next();
      parts.push(null);
    } else {
      const node = this.parseExpression();
      if (!this.isOp(':')) return node;
      this.next();
      parts.push(node);
    }
    if (this.isOp(':')) parts.push(null);
    else if (!this.isOp(']') && !this.isOp(',')) parts.push(this.parseExpression());
    else parts.push(null);
    if (this.isOp(':')) {
      this.next();
      parts.push(!this.isOp(']') && !this.isOp(',') ? this.parseExpression() : null);
    } else parts.push(null);
    return { k: 'Slice', line, start: parts[0], stop: parts[1], step: parts[2] };
  }

  private parseCallArgs(): CallArgs {
    const a: CallArgs = { args: [], kwargs: [], dynArgs: null, dynKwargs: null };
    this.expectOp('(');
    let requireComma = false;
    const ensure = (ok: boolean) => {
      if (!ok) this.fail('invalid syntax for function call expression');
    };
    while (!this.isOp(')')) {
      if (requireComma) {
        this.expectOp(',');
        if (this.isOp(')')) break;
      }
      if (this.isOp('*')) {
        ensure(a.dynArgs === null && a.dynKwargs === null);
        this.next();
        a.dynArgs = this.parseExpression();
      } else if (this.isOp('**')) {
        ensure(a.dynKwargs === null);
        this.next();
        a.dynKwargs = this.parseExpression();
      } else if (this.cur.t === 'name' && this.isOp('=', this.look(1))) {
        ensure(a.dynKwargs === null);
        const key = this.next().v;
        this.next();
        a.kwargs.push([key, this.parseExpression()]);
      } else {
        ensure(a.dynArgs === null && a.dynKwargs === null && a.kwargs.length === 0);
        a.args.push(this.parseExpression());
      }
      requireComma = true;
    }
    this.expectOp(')');
    return a;
  }

  private parseCall(node: Expr): Expr {
    const line = this.cur.line;
    return { k: 'Call', line, fn: node, ...this.parseCallArgs() };
  }

  private parseDottedName(): string {
    let name = this.expectName().v as string;
    while (this.isOp('.')) {
      this.next();
      name += '.' + this.expectName().v;
    }
    return name;
  }

  private parseFilter(node: Expr | null, startInline = false): Expr | null {
    while (this.isOp('|') || startInline) {
      if (!startInline) this.next();
      const line = this.cur.line;
      const name = this.parseDottedName();
      const args: CallArgs = this.isOp('(') ? this.parseCallArgs() : { args: [], kwargs: [], dynArgs: null, dynKwargs: null };
      node = { k: 'Filter', line, node, name, ...args };
      startInline = false;
    }
    return node;
  }

  private parseTest(node: Expr): Expr {
    const line = this.next().line;
    const negated = this.skipName('not');
    const name = this.parseDottedName();
    let args: CallArgs = { args: [], kwargs: [], dynArgs: null, dynKwargs: null };
    const c = this.cur;
    if (this.isOp('(')) args = this.parseCallArgs();
    else if (
      (c.t === 'name' || c.t === 'string' || c.t === 'int' || c.t === 'float' || this.isOp('[') || this.isOp('{')) &&
      !(c.t === 'name' && (c.v === 'else' || c.v === 'or' || c.v === 'and'))
    ) {
      if (this.isName('is')) this.fail('You cannot chain multiple tests with is');
      const arg = this.parsePostfix(this.parsePrimary());
      args.args.push(arg);
    }
    const test: Expr = { k: 'Test', line, node, name, ...args };
    return negated ? { k: 'Unary', line, op: 'not', node: test } : test;
  }
}

export function parse(tokens: Token[]): Stmt[] {
  return new Parser(tokens).parseTemplate();
}
