// Admission: what one object's own spec makes invalid (the controllers' status and the webhook share
// the words), and the AdmissionReview v1 the webhook reads and answers. Pure: no I/O, no clock.
export { checkSpec, conditionProblem, type JudgedKind } from './spec.ts';
export { readReview, type Review } from './review.ts';
export { lintWarnings } from './warnings.ts';
export { boundWarnings, reviewResponse, verdictOf, withIncoming, type ReviewedObject, type WarningsFor } from './verdict.ts';
