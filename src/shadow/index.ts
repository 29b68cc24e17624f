// Shadow decisions (docs/rules.md, "Shadow decisions"): what other modules may use.
export { ANNOTATION_PROPOSED_STATE } from './types.ts';
