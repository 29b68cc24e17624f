export {
  buildBundle, bundleManifest, bundleRegoSteps, bundleSource, canonicalJson, IN_THREAD_PACKER, inputDigestOf, joinText, packBundleFiles, packTar, selectRules, textLength,
  type BuiltBundle, type Text, type BundleInput, type BundlePacker, type BundleSelection,
} from './bundle.ts';
