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

/** Every module's imports of other modules of ours; `types` when all of them are `import type`. */
function dependencies(): Map<string, Map<string, 'code' | 'types'>> {
  const graph = new Map<string, Map<string, 'code' | 'types'>>();
  const importLine = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+'(\.[^']+)'|import\('(\.[^']+)'\)/gm;
  for (const file of sourceFiles(SRC)) {
    const from = moduleOf(file);
    const deps = graph.get(from) ?? new Map<string, 'code' | 'types'>();
    graph.set(from, deps);
    for (const m of readFileSync(file, 'utf8').matchAll(importLine)) {
      const target = m[3] ?? m[4] ?? '';
      const to = moduleOf(resolve(dirname(file), target));
      if (to === from) continue;
      const kind = m[2] !== undefined ? 'types' : 'code';
      if (deps.get(to) !== 'code') deps.set(to, kind);
    }
  }
  return graph;
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
    const io = ['kube', 'standalone', 'http', 'service', 'cli', 'controller', 'store'];
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
