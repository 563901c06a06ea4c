// Template syntax tree. Plain objects discriminated by `k`; `line` feeds error messages.

export type Expr =
  | { k: 'Const'; line: number; value: unknown }
  | { k: 'Name'; line: number; name: string }
  | { k: 'NSRef'; line: number; name: string; attr: string }
  | { k: 'List'; line: number; items: Expr[] }
  | { k: 'Tuple'; line: number; items: Expr[] }
  | { k: 'Dict'; line: number; pairs: [Expr, Expr][] }
  | { k: 'Getattr'; line: number; obj: Expr; attr: string }
  | { k: 'Getitem'; line: number; obj: Expr; arg: Expr }
  | { k: 'Slice'; line: number; start: Expr | null; stop: Expr | null; step: Expr | null }
  | ({ k: 'Call'; line: number; fn: Expr } & CallArgs)
  | ({ k: 'Filter'; line: number; node: Expr | null; name: string } & CallArgs)
  | ({ k: 'Test'; line: number; node: Expr; name: string } & CallArgs)
  | { k: 'BinOp'; line: number; op: string; left: Expr; right: Expr }
  | { k: 'Unary'; line: number; op: '-' | '+' | 'not'; node: Expr }
  | { k: 'Concat'; line: number; nodes: Expr[] }
  | { k: 'Compare'; line: number; expr: Expr; ops: [string, Expr][] }
  | { k: 'And' | 'Or'; line: number; left: Expr; right: Expr }
  | { k: 'CondExpr'; line: number; test: Expr; expr1: Expr; expr2: Expr | null };

export interface CallArgs {
  args: Expr[];
  kwargs: [string, Expr][];
  dynArgs: Expr | null;
  dynKwargs: Expr | null;
}

export type FilterExpr = Extract<Expr, { k: 'Filter' }>;
export type CallExpr = Extract<Expr, { k: 'Call' }>;

export type Stmt =
  | { k: 'Data'; line: number; text: string }
  | { k: 'Output'; line: number; node: Expr }
  | { k: 'If'; line: number; test: Expr; body: Stmt[]; else_: Stmt[] }
  | {
      k: 'For';
      line: number;
      target: Expr;
      iter: Expr;
      body: Stmt[];
      else_: Stmt[];
      test: Expr | null;
      recursive: boolean;
    }
  | { k: 'Assign'; line: number; target: Expr; node: Expr }
  | { k: 'AssignBlock'; line: number; target: Expr; filter: FilterExpr | null; body: Stmt[] }
  | { k: 'With'; line: number; targets: Expr[]; values: Expr[]; body: Stmt[] }
  | { k: 'Macro'; line: number; name: string; params: string[]; defaults: Expr[]; body: Stmt[] }
  | { k: 'CallBlock'; line: number; call: CallExpr; params: string[]; defaults: Expr[]; body: Stmt[] }
  | { k: 'FilterBlock'; line: number; filter: FilterExpr; body: Stmt[] }
  | { k: 'Block'; line: number; name: string; body: Stmt[]; scoped: boolean }
  | { k: 'Autoescape'; line: number; value: Expr; body: Stmt[] }
  | { k: 'Unsupported'; line: number; what: string; template: Expr | null };

export type Node = Expr | Stmt;
