export { createController, type Controller, type ControllerOptions } from './controller.ts';
export type { ControllerMetrics } from './drain.ts';
export { secretToken, MIN_API_KEY_LENGTH } from './secret.ts';
export { entitiesOf } from './directory.ts';
export { conditionsFor, kubeTime, sameStatus } from './conditions.ts';
export type { AgentView } from './deps.ts';
export {
  ANNOTATION_ISSUED_AT,
  ANNOTATION_REGENERATE,
  ANNOTATION_ROTATION,
  KIND_ORDER,
  LABEL_API_KEY,
  LABEL_CONNECTOR,
  keyText,
  parseKey,
  tokenSecretName,
  TokenSecretConflict,
  type ClusterWriter,
  type ObjectEvent,
  type Kind,
  type ObjectKey,
  type ObjectReader,
  type SourceObject,
  type TokenSecret,
} from './types.ts';
