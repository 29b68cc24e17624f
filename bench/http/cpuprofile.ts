// Summarises a V8 CPU profile (.cpuprofile, from bench/http/profile.ts or node --cpu-prof): where a
// process's time goes, by package or src/ module, and by function (self and inclusive).

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
export interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** "express", "src/http", "node:internal/http", "(garbage collector)"... */
function groupOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const src = /\/(src|bench)\/([^/]+)\//.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return url.replace(/^.*\//, '');
}

function nameOf(frame: CallFrame): string {
  const file = frame.url.replace(/^.*\/(node_modules\/|src\/|bench\/)/, '$1').replace(/^file:\/\//, '');
  return `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : ''}`.trim();
}

/** The summary as lines of text, `rows` entries per list. */
export function summariseProfile(profile: Profile, rows = 25): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const groups = new Map<string, number>();
  const add = (m: Map<string, number>, key: string, us: number): void => {
    m.set(key, (m.get(key) ?? 0) + us);
  };
  let totalUs = 0;
  let idleUs = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const node = byId.get(id);
    if (!node) return;
    if (node.callFrame.functionName === '(idle)') {
      idleUs += us;
      return;
    }
    totalUs += us;
    add(self, nameOf(node.callFrame), us);
    add(groups, groupOf(node.callFrame), us);
    const seen = new Set<string>(); // a recursive function counts once per sample
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = (byId.get(at) as ProfileNode).callFrame;
      if (frame.functionName === '(root)') break;
      const name = nameOf(frame);
      if (!seen.has(name)) {
        seen.add(name);
        add(inclusive, name, us);
      }
    }
  });

  const share = (us: number): string => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%`;
  const top = (m: Map<string, number>): [string, number][] => [...m].sort((a, b) => b[1] - a[1]).slice(0, rows);
  return [
    `${(totalUs / 1e6).toFixed(2)} s busy, ${(idleUs / 1e6).toFixed(2)} s idle; shares are of busy time`,
    '',
    'By package or module (self time)',
    ...top(groups).map(([g, us]) => `  ${share(us)}  ${g}`),
    '',
    'Functions by self time',
    ...top(self).map(([f, us]) => `  ${share(us)}  ${f}`),
    '',
    'Functions by inclusive time (src/ only)',
    ...top(new Map([...inclusive].filter(([f]) => / src\//.test(f)))).map(([f, us]) => `  ${share(us)}  ${f}`),
  ];
}
