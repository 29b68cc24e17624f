export {
  activeChanges,
  changesProblem,
  fieldName,
  generateChanges,
  regenerateChanges,
  revokeChanges,
  rotateChanges,
  withChanges,
} from './actions.ts';
export { countingWriter } from './counting.ts';
export { createController, type Controller, type ControllerOptions } from './controller.ts';
export type { ControllerMetrics } from './drain.ts';
export { createWorkQueue, type WorkQueue } from './queue.ts';
export { createSigningHolder, signingFingerprint, type SigningHolder, type SigningState } from './signing.ts';
export { abridgeStatus } from './recorded.ts';
export { recordedRego } from './rule.ts';
export { secretToken } from './secret.ts';

export {
  ANNOTATION_ISSUED_AT,
  ANNOTATION_REGENERATE,
  ANNOTATION_ROTATION,
  LABEL_API_KEY,
  LABEL_CONNECTOR,
  keyText,
  tokenSecretName,
  TokenSecretConflict,
  type ClusterWriter,
  type EditOutcome,
  type FieldChange,
  type ObjectEditor,
  type ObjectEvent,
  type Kind,
  type ObjectKey,
  type ObjectReader,
  type SourceObject,
  type TokenSecret,
} from './types.ts';
