// Just enough of PromQL to check alert rules against the metrics we register: which metrics an
// expression selects and by which labels, which labels it groups on (and over which selectors), and
// which selectors it reads through rate() or increase(). Not a parser of every expression: what our
// rule file needs, failing loudly on a character it does not know.

/** A metric selector: its name, the label names its matchers use, and its token index. */
export interface Selector {
  readonly name: string;
  readonly labels: readonly string[];
  readonly at: number;
}

/** A by/without/on/ignoring clause: its labels, and the token span of the expression they apply to. */
export interface Grouping {
  readonly keyword: string;
  readonly labels: readonly string[];
  readonly from: number;
  readonly to: number;
}

/** What an expression reads. */
export interface Reading {
  readonly selectors: readonly Selector[];
  readonly groupings: readonly Grouping[];
  /** Token spans of the arguments of rate(), irate() and increase(). */
  readonly rated: readonly { readonly from: number; readonly to: number }[];
}

const TOKEN =
  /\s+|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d+)?(?:ms|[smhdwy])*|=~|!=|!~|==|>=|<=|[-+*/%^(){}[\],=<>]/y;
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);
const RATES = new Set(['rate', 'irate', 'increase']);
const MATCHERS = new Set(['=', '!=', '=~', '!~']);

function tokenize(expr: string): string[] {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expr.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(expr);
    if (!m) throw new Error(`unexpected character at ${at} in: ${expr}`);
    if (m[0].trim() !== '') tokens.push(m[0]);
  }
  return tokens;
}

/** For each opening bracket's index, the index of its closing one (and back). */
function brackets(tokens: readonly string[]): Map<number, number> {
  const pairs = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((t, i) => {
    if (t === '(' || t === '{' || t === '[') open.push(i);
    if (t === ')' || t === '}' || t === ']') {
      const from = open.pop();
      if (from === undefined) throw new Error(`unbalanced ${t}`);
      pairs.set(from, i);
      pairs.set(i, from);
    }
  });
  if (open.length > 0) throw new Error('unbalanced brackets');
  return pairs;
}

const isName = (t: string | undefined): t is string => t !== undefined && /^[A-Za-z_:]/.test(t);

/** The selectors, groupings and rated spans of an expression. */
export function readPromql(expr: string): Reading {
  const tokens = tokenize(expr);
  const pair = brackets(tokens);
  const close = (i: number): number => pair.get(i) ?? i;
  const selectors: Selector[] = [];
  const groupings: Grouping[] = [];
  const rated: { from: number; to: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as string;
    if (t === '[') {
      i = close(i);
      continue;
    }
    if (!isName(t) || WORDS.has(t)) continue;
    const next = tokens[i + 1];
    if (GROUPING.has(t)) {
      if (next !== '(') continue;
      const end = close(i + 1);
      const labels = tokens.slice(i + 2, end).filter(isName);
      // `sum by (x) (expr)`: the group after the labels; `sum (expr) by (x)`: the group before them.
      const span =
        t !== 'by' && t !== 'without'
          ? { from: 0, to: tokens.length - 1 }
          : tokens[i - 1] === ')'
            ? { from: close(i - 1), to: i - 1 }
            : { from: end + 1, to: close(end + 1) };
      groupings.push({ keyword: t, labels, ...span });
      i = end;
      continue;
    }
    // A function, or an aggregation with its clause first (`sum by (x) (...)`).
    if (next === '(' || next === 'by' || next === 'without') {
      if (RATES.has(t)) rated.push({ from: i + 1, to: close(i + 1) });
      continue;
    }
    const labels: string[] = [];
    if (next === '{') {
      const end = close(i + 1);
      for (let j = i + 2; j < end; j++) if (isName(tokens[j]) && MATCHERS.has(tokens[j + 1] ?? '')) labels.push(tokens[j] as string);
      selectors.push({ name: t, labels, at: i });
      i = end;
      continue;
    }
    selectors.push({ name: t, labels, at: i });
  }
  return { selectors, groupings, rated };
}
