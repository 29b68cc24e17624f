export { runSuite, type SuiteOutcome, type TestText } from './suite.ts';

export { formatText, passed, summaryLine, type TestReport } from './report.ts';
export { formatJson, formatJunit, formatTap } from './formats.ts';
export type { FileError } from './source.ts';
