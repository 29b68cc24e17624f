// The house rules a reviewer would otherwise check by hand: they fail here instead of drifting.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** `src/http/app.ts` → `http`; `src/cli.ts` → `cli` (a top-level file and its folder are one module). */
function moduleOf(file: string): string {
  const first = relative(SRC, file).split(sep)[0] ?? '';
  return first.replace(/\.ts$/, '');
}

/** One import of a file of ours: who imports, the file imported, and whether only types. */
interface Edge {
  readonly file: string;
  readonly target: string;
  readonly kind: 'code' | 'types';
}

const IMPORT_LINE = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+'(\.[^']+)'|import\('(\.[^']+)'\)/gm;

/** Every relative import in `files`, resolved to the file it names. */
function importsOf(files: readonly string[]): Edge[] {
  return files.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(IMPORT_LINE)].map((m) => ({
      file,
      target: resolve(dirname(file), m[3] ?? m[4] ?? ''),
      kind: m[2] !== undefined ? ('types' as const) : ('code' as const),
    })),
  );
}

/** Every module's imports of other modules of ours; `types` when all of them are `import type`. */
function dependencies(): Map<string, Map<string, 'code' | 'types'>> {
  const graph = new Map<string, Map<string, 'code' | 'types'>>();
  for (const file of sourceFiles(SRC)) if (!graph.has(moduleOf(file))) graph.set(moduleOf(file), new Map());
  for (const { file, target, kind } of importsOf(sourceFiles(SRC))) {
    const from = moduleOf(file);
    const to = moduleOf(target);
    if (to === from) continue;
    const deps = graph.get(from) ?? new Map<string, 'code' | 'types'>();
    graph.set(from, deps);
    if (deps.get(to) !== 'code') deps.set(to, kind);
  }
  return graph;
}

/** The circles of the module graph (Tarjan's strongly connected components of more than one module, or one importing itself). */
function cycles(graph: ReadonlyMap<string, ReadonlyMap<string, unknown>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) component.push(w);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** A folder's surface: `src/x/index.ts`, or the top-level file `src/x.ts` of a module that has one. */
function isSurface(target: string): boolean {
  const rel = relative(SRC, target).split(sep);
  return (rel.length === 1 && rel[0]?.endsWith('.ts') === true) || (rel.length === 2 && rel[1] === 'index.ts');
}

/** The table docs/architecture.md must hold, between its `dependencies` markers. */
function dependencyTable(): string {
  const graph = dependencies();
  const rows = [...graph.keys()].sort().map((from) => {
    const deps = [...(graph.get(from) ?? new Map()).entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([to, kind]) => (kind === 'types' ? `\`${to}\` (types)` : `\`${to}\``));
    return `| \`${from}\` | ${deps.length > 0 ? deps.join(', ') : '(none)'} |`;
  });
  return ['| Module | Imports |', '|---|---|', ...rows].join('\n');
}

describe('house rules', () => {
  it('has no circle between modules: every import runs one way', () => {
    expect(cycles(dependencies())).toEqual([]);
  });

  it('imports another module only through its index.ts (or its top-level file)', () => {
    const past = importsOf(sourceFiles(SRC))
      .filter((e) => moduleOf(e.file) !== moduleOf(e.target) && !isSurface(e.target))
      .map((e) => `${relative(ROOT, e.file)} → ${relative(ROOT, e.target)}`);
    expect(past).toEqual([]);
  });

  it('reads YAML with one library, the yaml package', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    const names = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
    const second = names.filter((n) => /yaml/i.test(n) && n !== 'yaml');
    expect(second).toEqual([]);
    // Tests included: a test reading YAML with another library would check against other readings.
    const importsOther = ['src', 'test', 'bench', 'scripts']
      .flatMap((dir) => readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).map((f) => join(ROOT, dir, f)))
      .filter((f) => f.endsWith('.ts') && /from\s+'[^'.][^']*yaml[^']*'/.test(readFileSync(f, 'utf8').replace(/from\s+'yaml'/g, '')))
      .map((f) => relative(ROOT, f));
    expect(importsOther).toEqual([]);
  });

  it('keeps every source file under src/ at 400 lines or fewer', () => {
    const over = sourceFiles(SRC)
      .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > 400);
    expect(over).toEqual([]);
  });

  it('documents in docs/architecture.md the dependencies the imports really have', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const documented = /<!-- dependencies: begin[^>]*-->\n([\s\S]*?)\n<!-- dependencies: end -->/.exec(doc)?.[1];
    expect(documented, 'docs/architecture.md lost its <!-- dependencies: begin/end --> markers').toBeDefined();
    expect(documented).toBe(dependencyTable());
  });

  it('keeps the pure modules free of I/O modules of ours', () => {
    const graph = dependencies();
    const pure = ['api', 'policy', 'bundle', 'auth', 'admission', 'lint'];
    const io = ['kube', 'standalone', 'http', 'server', 'modes', 'pipeline', 'opa', 'cli', 'controller', 'store'];
    const crossings = pure.flatMap((p) => [...(graph.get(p)?.keys() ?? [])].filter((d) => io.includes(d)).map((d) => `${p} → ${d}`));
    expect(crossings).toEqual([]);
  });

  it('links from the docs only to files that exist inside the repository', () => {
    const docs = [join(ROOT, 'README.md'), join(ROOT, 'CONTRIBUTING.md'), join(ROOT, 'test', 'README.md')].concat(
      // Every Markdown page under docs/, sub-folders (docs/design/) included.
      readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.md'))
        .map((f) => join(ROOT, 'docs', f)),
    );
    const outside = docs.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      // Code spans and blocks may show link-like text; only prose holds links.
      const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
      const links = [...prose.matchAll(/\]\((?!https?:|#|mailto:)([^)#\s]+)/g)].map((m) => m[1] ?? '');
      // The architecture page describes this repository alone: not even a path outside it in code spans.
      const paths = file.endsWith('architecture.md') ? [...text.matchAll(/(\.\.\/[\w./-]+)/g)].map((m) => m[1] ?? '') : [];
      return [...links, ...paths]
        .filter((t) => {
          const target = resolve(dirname(file), t);
          return !target.startsWith(ROOT + sep) || !existsSync(target);
        })
        .map((t) => `${relative(ROOT, file)}: ${t}`);
    });
    expect(outside).toEqual([]);
  });
});
