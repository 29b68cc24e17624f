export { opaConfig, SIGNING_KEY_LABEL, type OpaSigning } from './config.ts';
export { openOpa, opaAllows, opaAllowsOnBundle, type Opa } from './opa.ts';
