// Benchmarks (make bench). Each figure is printed with its ratio to a baseline measured in the same
// run, so numbers from different machines can be compared by their ratios. Not a test: nothing here
// passes or fails.
import { buildBundle, selectRules } from '../src/bundle/index.ts';
import {
  buildIndex, compileCondition, compileRule, decide, toDecisionInput,
  type CompiledRule, type DecisionInput, type RuleIndex, type RuleModel,
} from '../src/policy/index.ts';
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
      namespace: 'bench', name: `rule-${String(i).padStart(5, '0')}`, state: 'Enforced', description: `Generated rule ${i}`,
      subjectType: `subject-${Math.floor(r() * SUBJECT_TYPES)}`, actions, resourceType: `resource-${Math.floor(r() * RESOURCE_TYPES)}`,
      conditionText: text, condition: compiled.cond,
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
    const doc = toDecisionInput(JSON.parse(JSON.stringify({
      principal: { type: rule.subjectType, id: `u-${i}`, team: 'blue', roles: allow ? ['admin'] : ['viewer'], level: allow ? 5 : 1 },
      action: rule.actions[0],
      resource: { type: rule.resourceType, id: `r-${i}`, team: allow ? 'blue' : 'red', owner: 'x', classification: 'public', path: allow ? '/shared/a' : '/home/a' },
      context: { ipAddress: '10.1.2.3' },
    })) as unknown);
    if (typeof doc === 'string') throw new Error(doc);
    return doc;
  });
}

/** The index a decision would use without it: every rule of the tenant is a candidate. */
function linearIndex(tenant: string, rules: readonly CompiledRule[]): RuleIndex {
  const sorted = [...rules].sort((a, b) => (a.model.name < b.model.name ? -1 : 1));
  return {
    tenant, size: sorted.length, rules: sorted,
    candidates: (s, a, t) => sorted.filter((x) => x.model.subjectType === s && x.model.resourceType === t && x.model.actions.includes(a)),
    slot: (s, a, t) => sorted.filter((x) => x.model.subjectType === s && x.model.resourceType === t && x.model.actions.includes(a)),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** ns per decision over `requests`, one pass. */
function passNs(index: RuleIndex, requests: readonly DecisionInput[]): number {
  let allowed = 0;
  const t0 = process.hrtime.bigint();
  for (const req of requests) if (decide(index, req).allow) allowed++;
  const ns = Number(process.hrtime.bigint() - t0) / requests.length;
  if (allowed === 0) throw new Error('no request was allowed: the benchmark is not measuring what it says');
  return ns;
}

interface Setup { readonly rules: number; readonly compiled: readonly CompiledRule[]; readonly index: RuleIndex; readonly requests: readonly DecisionInput[] }

/**
 * Measures every setup in turn, `rounds` times, after a warm-up pass each: a burst of noise on a
 * shared machine then hits every setup alike instead of one. Returns the median ns per setup, and
 * the median of the per-round ratios of the last setup to the first.
 */
function interleaved(setups: readonly Setup[], rounds: number): { ns: number[]; ratio: number } {
  setups.forEach((s) => passNs(s.index, s.requests));
  const samples = setups.map(() => [] as number[]);
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const round = setups.map((s) => passNs(s.index, s.requests));
    round.forEach((ns, i) => samples[i]!.push(ns));
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
  console.log(`  conditions ${conditions === 'shared' ? 'shared (4 conditions repeat across the rules)' : 'unique (each rule adds its own constant to one of the 4)'}:`);
  const setups: Setup[] = [10, 1_000, 10_000].map((n) => {
    const rules = makeRules(n, n, conditions);
    const compiled = rules.map(compileRule);
    return { rules: n, compiled, index: buildIndex('bench', compiled), requests: makeRequests(rules, 20_000, 7 * n) };
  });
  const { ns, ratio } = interleaved(setups, 9);
  setups.forEach((setup, i) => {
    const linear = setup.rules <= 1_000 ? passNs(linearIndex('bench', setup.compiled), setup.requests.slice(0, 5_000)) : undefined;
    console.log(`    ${fmt(setup.rules).padStart(6)} rules: ${fmt(ns[i] as number).padStart(6)} ns/decision` + (linear === undefined ? '' : `   (without the index: ${fmt(linear)} ns, ${fmt(linear / (ns[i] as number), 1)}x slower)`));
  });
  console.log(`    ratio 10,000 / 10 rules: ${fmt(ratio, 2)} (median of 9 interleaved rounds; target <= 2)`);
}
console.log('');
console.log('Bundle build (translate, tar, gzip level 9, sha256), median of 5');
const small = await msToBuild(selectRules('bench', makeRules(10, 1, 'unique'), {}), 5);
const large = await msToBuild(selectRules('bench', makeRules(10_000, 2, 'unique'), {}), 5);
console.log(`      10 rules: ${fmt(small.ms, 1).padStart(7)} ms, ${fmt(small.bytes)} bytes (policy.rego ${fmt(small.regoBytes)} bytes)`);
console.log(`  10,000 rules: ${fmt(large.ms, 1).padStart(7)} ms, ${fmt(large.bytes)} bytes (policy.rego ${fmt(large.regoBytes)} bytes) (target < 300 ms)`);
console.log(`  ratio 10,000 / 10 rules: ${fmt(large.ms / small.ms, 0)}x time, ${fmt(large.bytes / small.bytes, 0)}x bytes`);
