// The shadow hook's own cost, in one process (bench/shadow.ts prints it next to the HTTP figures): the
// same 1,000 decisions of the 10-rule tenant made by decide() alone, and by decide() then the ledger's
// observe() with 100 Proposed rules (one in ten over the requests' types), alternated in rounds. The
// HTTP runs measure the whole request on a loaded machine; this is the part shadow decisions add.
import {
  buildIndex,
  compileCondition,
  compileRule,
  decide,
  EMPTY_DIRECTORY,
  toDecisionInput,
  type DecisionInput,
  type RuleModel,
} from '../src/policy/index.ts';
import { createShadowLedger } from '../src/shadow/index.ts';
import { median } from './http/rounds.ts';
import { decisionBodies, opaInput, proposedRules, TENANT, tenantRules, type GeneratedRule } from './http/tenant.ts';

function modelOf(r: GeneratedRule, state: RuleModel['state']): RuleModel {
  const c = compileCondition(r.condition);
  if (!c.ok) throw new Error(c.error.message);
  return {
    namespace: TENANT,
    name: r.name,
    state,
    description: undefined,
    subjectType: r.subjectType,
    actions: r.actions,
    resourceType: r.resourceType,
    conditionText: r.condition,
    condition: c.cond,
  };
}

export interface InProcessCost {
  /** ns per decision: decide() alone, and decide() + observe(). */
  readonly decideNs: number;
  readonly shadowedNs: number;
}

/** Medians over `rounds` rounds of `passes` passes over the 1,000 requests each. */
export function measureInProcess(rounds: number, passes: number): InProcessCost {
  const live = tenantRules(10);
  const index = buildIndex(
    TENANT,
    live.map((r) => compileRule(modelOf(r, 'Enforced'))),
  );
  const shadow = {
    proposed: buildIndex(
      TENANT,
      proposedRules(live, 100).map((r) => compileRule(modelOf(r, 'Proposed'))),
    ),
    removals: new Set<string>(),
  };
  const inputs = decisionBodies(live, 1_000, 1).map((b) => {
    const d = toDecisionInput(opaInput(b));
    if (typeof d === 'string') throw new Error(d);
    return d;
  });
  const ledger = createShadowLedger({ replica: 'bench', now: Date.now });
  let sink = 0;
  const run = (shadowed: boolean, input: readonly DecisionInput[]): number => {
    const started = process.hrtime.bigint();
    for (let p = 0; p < passes; p++) {
      for (const x of input) {
        const d = decide(index, x, EMPTY_DIRECTORY);
        if (d.allow) sink++;
        if (shadowed) ledger.observe(TENANT, shadow, index, x, EMPTY_DIRECTORY, d);
      }
    }
    return Number(process.hrtime.bigint() - started) / (passes * input.length);
  };
  run(false, inputs);
  run(true, inputs);
  const plain: number[] = [];
  const shadowed: number[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      plain.push(run(false, inputs));
      shadowed.push(run(true, inputs));
    } else {
      shadowed.push(run(true, inputs));
      plain.push(run(false, inputs));
    }
  }
  if (sink < 0) console.log(sink);
  return { decideNs: median(plain), shadowedNs: median(shadowed) };
}
