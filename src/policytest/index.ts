export { runSuite, type SuiteOutcome, type TestText } from './suite.ts';

export { formatText, passed, summaryLine, type TestReport } from './report.ts';
export { formatJson, formatJunit, formatTap, attr as xmlAttr, xml as xmlText } from './formats.ts';
export type { FileError } from './source.ts';
export { worldOf, type TenantWorld, type World, type WorldBundle } from './world.ts';
export { admits } from './by-opa.ts';
