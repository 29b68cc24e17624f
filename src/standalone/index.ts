export { createFolderSource, DEFAULT_SETTLE_MS, type FolderSource, type FolderSourceOptions } from './source.ts';
export { createThreadReader, DEFAULT_MANIFEST_LIMITS, type ManifestLimits, type ManifestReader } from './reader.ts';
export { walkManifests } from './walk.ts';
export { openStateFolder, type ObjectState, type StateFolder } from './state.ts';
export { readObjects, type DocumentProblem } from './objects.ts';
export { connectorPath, createOpaConfigWriter, opaConfig, opaConfigFile, type OpaConfigInput, type OpaConfigWriter } from './opa.ts';
