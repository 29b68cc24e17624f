export { ANNOTATION_PROPOSED_STATE, type ShadowLedger } from './types.ts';
export { createShadowLedger, type LocalShadowLedger } from './ledger.ts';
