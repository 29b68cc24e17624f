// Benchmarks (make bench). Each figure is printed with its ratio to a baseline measured in the same
// run, so numbers from different machines can be compared by their ratios. Not a test: nothing here
// passes or fails.
import { buildBundle, selectRules } from '../src/bundle/index.ts';
import {
  buildDirectory,
  buildIndex,
  compileCondition,
  compileRule,
  decide,
  toDecisionInput,
  type CompiledRule,
  type DecisionInput,
  type EntityDirectory,
  type RuleIndex,
  type RuleModel,
} from '../src/policy/index.ts';
import { search } from '../src/authzen/index.ts';
import { directoryLoad } from './directory.ts';
import { CONDITIONS, rng } from './generate.ts';

const SUBJECT_TYPES = 50;
const ACTIONS = 20;
const RESOURCE_TYPES = 100;

/**
 * `shared`: the conditions repeat (as in real tenants, where most rules say team == team or
 * "admin" in roles); `unique`: every rule's condition carries its own constant, the worst case.
 */
function makeRules(n: number, seed: number, conditions: 'shared' | 'unique'): RuleModel[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const template = CONDITIONS[i % CONDITIONS.length] as string;
    const text = conditions === 'shared' ? template : `${template} && principal.id != "nobody-${i}"`;
    const compiled = compileCondition(text);
    if (!compiled.ok) throw new Error(compiled.error.message);
    const actions = [...new Set([`action-${Math.floor(r() * ACTIONS)}`, `action-${Math.floor(r() * ACTIONS)}`])];
    return {
      namespace: 'bench',
      name: `rule-${String(i).padStart(5, '0')}`,
      state: 'Enforced',
      description: `Generated rule ${i}`,
      subjectType: `subject-${Math.floor(r() * SUBJECT_TYPES)}`,
      actions,
      resourceType: `resource-${Math.floor(r() * RESOURCE_TYPES)}`,
      conditionText: text,
      condition: compiled.cond,
    };
  });
}

/**
 * Requests aimed at the rules' own (subject, action, resource) keys; about half are allowed. They go
 * through JSON text, as requests do, so no string is shared with the rules.
 */
function makeRequests(rules: readonly RuleModel[], n: number, seed: number): DecisionInput[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const rule = rules[Math.floor(r() * rules.length)] as RuleModel;
    const allow = i % 2 === 0;
    const doc = toDecisionInput(
      JSON.parse(
        JSON.stringify({
          principal: { type: rule.subjectType, id: `u-${i}`, team: 'blue', roles: allow ? ['admin'] : ['viewer'], level: allow ? 5 : 1 },
          action: rule.actions[0],
          resource: {
            type: rule.resourceType,
            id: `r-${i}`,
            team: allow ? 'blue' : 'red',
            owner: 'x',
            classification: 'public',
            path: allow ? '/shared/a' : '/home/a',
          },
          context: { ipAddress: '10.1.2.3' },
        }),
      ) as unknown,
    );
    if (typeof doc === 'string') throw new Error(doc);
    return doc;
  });
}

/** The index a decision would use without it: every rule of the tenant is a candidate. */
function linearIndex(tenant: string, rules: readonly CompiledRule[]): RuleIndex {
  const sorted = [...rules].sort((a, b) => (a.model.name < b.model.name ? -1 : 1));
  return {
    tenant,
    size: sorted.length,
    rules: sorted,
    candidates: (s, a, t) => sorted.filter((x) => x.model.subjectType === s && x.model.resourceType === t && x.model.actions.includes(a)),
    slot: (s, a, t) => sorted.filter((x) => x.model.subjectType === s && x.model.resourceType === t && x.model.actions.includes(a)),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** ns per decision over `requests`, one pass. */
function passNs(index: RuleIndex, requests: readonly DecisionInput[], directory?: EntityDirectory): number {
  let allowed = 0;
  const t0 = process.hrtime.bigint();
  for (const req of requests) if (decide(index, req, directory).allow) allowed++;
  const ns = Number(process.hrtime.bigint() - t0) / requests.length;
  if (allowed === 0) throw new Error('no request was allowed: the benchmark is not measuring what it says');
  return ns;
}

interface Setup {
  readonly rules: number;
  readonly compiled: readonly CompiledRule[];
  readonly index: RuleIndex;
  readonly requests: readonly DecisionInput[];
}

/**
 * Measures every setup in turn, `rounds` times, after a warm-up pass each: a burst of noise on a
 * shared machine then hits every setup alike instead of one. Returns the median ns per setup, and
 * the median of the per-round ratios of the last setup to the first.
 */
function interleaved(setups: readonly Setup[], rounds: number): { ns: number[]; ratio: number } {
  for (const s of setups) passNs(s.index, s.requests);
  const samples = setups.map(() => [] as number[]);
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const round = setups.map((s) => passNs(s.index, s.requests));
    round.forEach((ns, i) => {
      samples[i]!.push(ns);
    });
    ratios.push(round[round.length - 1]! / round[0]!);
  }
  return { ns: samples.map(median), ratio: median(ratios) };
}

async function msToBuild(rules: readonly RuleModel[], runs: number): Promise<{ ms: number; bytes: number; regoBytes: number }> {
  let last = await buildBundle({ tenant: 'bench', name: 'all', connector: 'c', regoVersion: 0, rules }, 1);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    last = await buildBundle({ tenant: 'bench', name: 'all', connector: 'c', regoVersion: 0, rules }, 1);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { ms: median(times), bytes: last.bytes.length, regoBytes: Buffer.byteLength(last.rego) };
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

console.log(`acl-operator benchmarks: node ${process.version}, ${new Date().toISOString()}`);
console.log('');
console.log('Decision cost (decide(): index lookup, condition closures, reasons), 20,000 requests, ~50% allowed');
console.log(`rules spread over ${SUBJECT_TYPES} subject types, ${ACTIONS} actions, ${RESOURCE_TYPES} resource types`);
for (const conditions of ['shared', 'unique'] as const) {
  console.log(
    `  conditions ${conditions === 'shared' ? 'shared (4 conditions repeat across the rules)' : 'unique (each rule adds its own constant to one of the 4)'}:`,
  );
  const setups: Setup[] = [10, 1_000, 10_000].map((n) => {
    const rules = makeRules(n, n, conditions);
    const compiled = rules.map(compileRule);
    return { rules: n, compiled, index: buildIndex('bench', compiled), requests: makeRequests(rules, 20_000, 7 * n) };
  });
  const { ns, ratio } = interleaved(setups, 9);
  setups.forEach((setup, i) => {
    const linear = setup.rules <= 1_000 ? passNs(linearIndex('bench', setup.compiled), setup.requests.slice(0, 5_000)) : undefined;
    console.log(
      `    ${fmt(setup.rules).padStart(6)} rules: ${fmt(ns[i] as number).padStart(6)} ns/decision` +
        (linear === undefined ? '' : `   (without the index: ${fmt(linear)} ns, ${fmt(linear / (ns[i] as number), 1)}x slower)`),
    );
  });
  console.log(`    ratio 10,000 / 10 rules: ${fmt(ratio, 2)} (median of 9 interleaved rounds; target <= 2)`);
}
console.log('');
{
  // The same decisions with the principal's attributes in the request (baseline) and looked up in
  // an entity directory of 20,000 users (the request sends type and id only).
  const rules = makeRules(1_000, 11, 'shared');
  const index = buildIndex('bench', rules.map(compileRule));
  const withAttributes = makeRequests(rules, 20_000, 13);
  const entities = withAttributes.map((req) => {
    const { type, id, ...properties } = req.principal;
    return { type: type as string, id: id as string, properties };
  });
  const directory = buildDirectory(entities);
  const idOnly = withAttributes.map((req) => ({
    ...req,
    principal: { type: req.principal['type'] as string, id: req.principal['id'] as string },
  }));
  passNs(index, withAttributes);
  passNs(index, idOnly, directory);
  const base: number[] = [];
  const looked: number[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < 9; r++) {
    const a = passNs(index, withAttributes);
    const b = passNs(index, idOnly, directory);
    base.push(a);
    looked.push(b);
    ratios.push(b / a);
  }
  console.log('Entity directory (1,000 rules; principal attributes in the request vs looked up among 20,000 entities)');
  console.log(`  attributes in the request: ${fmt(median(base)).padStart(6)} ns/decision`);
  console.log(
    `  attributes from directory: ${fmt(median(looked)).padStart(6)} ns/decision   ratio ${fmt(median(ratios), 2)} (median of 9 interleaved rounds)`,
  );

  // AuthZEN subject search: every user of one subject type in the directory is a candidate.
  const rule = rules.find((x) => x.condition !== undefined) as RuleModel;
  const users = Array.from({ length: 20_000 }, (_, i) => ({
    type: rule.subjectType,
    id: `user-${String(i).padStart(5, '0')}`,
    properties: { team: 'blue', roles: i % 2 === 0 ? ['admin'] : ['viewer'], level: i % 10 },
  }));
  const view = { tenant: 'bench', index, directory: buildDirectory(users) };
  const body = {
    subject: { type: rule.subjectType },
    action: { name: rule.actions[0] },
    resource: { type: rule.resourceType, id: 'r-1', properties: { team: 'blue', owner: 'x', classification: 'public', path: '/shared/a' } },
  };
  const times: number[] = [];
  let found = 0;
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint();
    let token: string | undefined;
    found = 0;
    do {
      const reply = search('subject', { ...body, page: token === undefined ? { limit: 1000 } : { token } }, view);
      if (!reply.ok) throw new Error(reply.message);
      const page = reply.body as { page: { next_token: string }; results: unknown[] };
      found += page.results.length;
      token = page.page.next_token || undefined;
    } while (token !== undefined);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  console.log(
    `  subject search over 20,000 users, pages of 1,000: ${fmt(median(times), 1)} ms for all pages (${fmt(found)} found), ${fmt((median(times) * 1e6) / 20_000)} ns per candidate = ${fmt((median(times) * 1e6) / 20_000 / median(looked), 1)}x a directory decision`,
  );
}
console.log('');
{
  console.log('Directories of one tenant through the controller (first load, then one edit a rule reads; bundle rebuilt)');
  const small = await directoryLoad(10, 5_000);
  const large = await directoryLoad(100, 5_000);
  for (const [label, r] of [
    ['10 x 5,000', small],
    ['100 x 5,000', large],
  ] as const) {
    console.log(
      `  ${label.padStart(11)} entities: first load ${fmt(r.firstLoadMs).padStart(6)} ms, one edit ${fmt(r.editMs).padStart(6)} ms, policy.rego ${fmt(r.regoBytes / 1e6, 1)} MB`,
    );
  }
  console.log(
    `  ratio 100 / 10 Directories: first load ${fmt(large.firstLoadMs / small.firstLoadMs, 1)}x, edit ${fmt(large.editMs / small.editMs, 1)}x (10x the entities)`,
  );
}
console.log('');
console.log('Bundle build (translate, tar, gzip level 9, sha256), median of 5');
const small = await msToBuild(selectRules('bench', makeRules(10, 1, 'unique'), {}), 5);
const large = await msToBuild(selectRules('bench', makeRules(10_000, 2, 'unique'), {}), 5);
console.log(`      10 rules: ${fmt(small.ms, 1).padStart(7)} ms, ${fmt(small.bytes)} bytes (policy.rego ${fmt(small.regoBytes)} bytes)`);
console.log(
  `  10,000 rules: ${fmt(large.ms, 1).padStart(7)} ms, ${fmt(large.bytes)} bytes (policy.rego ${fmt(large.regoBytes)} bytes) (target < 300 ms)`,
);
console.log(`  ratio 10,000 / 10 rules: ${fmt(large.ms / small.ms, 0)}x time, ${fmt(large.bytes / small.bytes, 0)}x bytes`);
