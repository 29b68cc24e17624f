export { createShadowView, SHADOW_ENQUEUE_MS, type ShadowHub, type SharedTallies } from './view.ts';
export { ANNOTATION_PROPOSED_STATE, type ShadowLedger, type ShadowRole, type ShadowTally } from './types.ts';
