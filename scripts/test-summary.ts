// Prints the closing line of a vitest JSON report ("vitest: 174 passed, 0 failed, 1 skipped"), so a
// reader (or CI) sees the counts in one plain line. Exits 1 if the report is missing or ran no test.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-results.json';
let report: { numPassedTests?: number; numFailedTests?: number; numPendingTests?: number; numTodoTests?: number };
try {
  report = JSON.parse(readFileSync(file, 'utf8')) as typeof report;
} catch (err) {
  console.error(`no vitest report at ${file}: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
const failed = report.numFailedTests ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`vitest: ${passed} passed, ${failed} failed, ${skipped} skipped`);
if (passed + failed === 0) process.exit(1);
