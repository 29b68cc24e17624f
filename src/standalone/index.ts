export { createManifestEditor } from './edit.ts';
export { createFolderSource, type FolderSource, type FolderSourceOptions } from './source.ts';
export { createThreadReader, DEFAULT_MANIFEST_LIMITS, type ManifestLimits } from './reader.ts';
export { createReadingThread } from './reading.ts';
export { walkManifests } from './walk.ts';
export { openStateFolder, type ObjectState, type StateFolder } from './state.ts';
export { readObjects, type DocumentProblem } from './objects.ts';
export { createOpaConfigWriter, opaConfigFile, publicKeyFile } from './sidecar-configs.ts';
export {
  ensureSigningKey,
  keyFilesStamp,
  readKeyFiles,
  retirePreviousKey,
  ringOf,
  rotateSigningKey,
  signingKeyFiles,
} from './signing-keys.ts';
