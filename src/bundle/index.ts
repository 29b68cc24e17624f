export {
  buildBundle,
  bundleRegoSteps,
  canonicalJson,
  entityTypesTake,
  IN_THREAD_PACKER,
  inputDigestOf,
  selectRules,
  type BundleArchive,
  type BundleSource,
  type BuiltBundle,
  type BundleInput,
  type BundlePacker,
} from './bundle.ts';
export { createPackingThread, createThreadPacker } from './packing.ts';
