export {
  buildBundle,
  bundleRegoSteps,
  canonicalJson,
  IN_THREAD_PACKER,
  inputDigestOf,
  packBundleFiles,
  selectRules,
  textLength,
  type BuiltBundle,
  type Text,
  type BundleInput,
  type BundlePacker,
} from './bundle.ts';
