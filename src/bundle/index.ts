export {
  buildBundle, bundleManifest, bundleRegoSteps, bundleSource, canonicalJson, IN_THREAD_PACKER, inputDigestOf, packBundleFiles, packTar, selectRules,
  type BuiltBundle, type BundleInput, type BundlePacker, type BundleSelection,
} from './bundle.ts';
