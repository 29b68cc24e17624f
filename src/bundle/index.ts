export {
  buildBundle,
  bundleRegoSteps,
  canonicalJson,
  entityTypesTake,
  IN_THREAD_PACKER,
  inputDigestOf,
  selectRules,
  type BuiltBundle,
  type Text,
  type BundleInput,
  type BundlePacker,
} from './bundle.ts';
export { createPackingThread, createThreadPacker } from './packing.ts';
