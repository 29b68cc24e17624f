export { createFolderSource, yamlFiles, type FolderSource, type FolderSourceOptions } from './source.ts';
export { openStateFolder, type ObjectState, type StateFolder } from './state.ts';
export { readObjects, type DocumentProblem } from './objects.ts';
export { readManifestFolder } from './folder.ts';
export { connectorPath, createOpaConfigWriter, opaConfig, opaConfigFile, type OpaConfigInput, type OpaConfigWriter } from './opa.ts';
