export { buildBundle, bundleSource, canonicalJson, packTar, selectRules, type BuiltBundle, type BundleInput, type BundleSelection } from './bundle.ts';
