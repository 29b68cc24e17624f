export { openOpa, opaAllows, opaAllowsOnBundle, type Opa } from './opa.ts';
