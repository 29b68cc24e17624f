export { DECISION_LOG_CHUNK_BYTES, opaConfig, SIGNING_KEY_LABEL, type OpaSigning } from './config.ts';
export { openOpa, opaAllows, opaAllowsOnBundle, type Opa } from './opa.ts';
