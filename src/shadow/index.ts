// Shadow decisions (docs/rules.md, "Shadow decisions"): what other modules may use.
export { ANNOTATION_PROPOSED_STATE, type ShadowLedger } from './types.ts';
export { createShadowLedger, type LocalShadowLedger } from './ledger.ts';
