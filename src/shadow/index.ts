export {
  ANNOTATION_PROPOSED_STATE,
  SHADOW_EXAMPLES,
  type ShadowExample,
  type ShadowLedger,
  type ShadowRole,
  type ShadowTally,
} from './types.ts';
export { createShadowLedger, exampleText, MAX_EXAMPLE_CHARS, type LocalShadowLedger, type ServedTenant } from './ledger.ts';
export { createShadowView, SHADOW_ENQUEUE_MS, type ShadowHub, type SharedTallies } from './view.ts';
