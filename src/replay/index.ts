// `acl-operator replay`'s parts, as the command uses them (src/cli/replay.ts).
export { replayLogs, type Progress } from './run.ts';
export { createOpaReplay } from './opa.ts';
export { sourcesOf } from './read.ts';
export type { ReplayReport } from './types.ts';
export { FORMATS, summaryLine } from './formats.ts';
