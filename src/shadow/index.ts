// Shadow decisions (docs/rules.md, "Shadow decisions"): what other modules may use.
export { ANNOTATION_PROPOSED_STATE, type ShadowLedger, type ShadowRole } from './types.ts';
export { createShadowLedger, type LocalShadowLedger } from './ledger.ts';
export { createShadowView, SHADOW_ENQUEUE_MS, type ShadowHub, type SharedTallies } from './view.ts';
