// Prints the closing lines of a vitest JSON report ("vitest: 174 passed, 0 failed, 1 skipped", then
// one line per suite that needs an outside dependency: test/e2e (a Kubernetes API server), test/console/browser
// (a chromium) and test/opa (an OPA binary)), so a reader (or CI) sees at a glance what ran and what was skipped.
// Exits 1 if the report is missing or ran no test, when E2E_KUBECONFIG is set and no e2e test
// passed, when a chromium is there and no test/console/browser test passed, or when OPA_BIN is set and no
// test/opa test passed (a real OPA is the judge: never silently skipped).
//   node scripts/test-summary.ts [report.json] [--opa-only | --timing-only]   (a run of test/opa or test/timing alone)
import { existsSync, readFileSync } from 'node:fs';

interface Assertion {
  status?: string;
  fullName?: string;
}
interface FileResult {
  name?: string;
  assertionResults?: Assertion[];
}
const args = process.argv.slice(2);
const opaOnly = args.includes('--opa-only');
// test/timing runs alone (vitest.timing.config.ts): its report holds nothing else to count.
const timingOnly = args.includes('--timing-only');
const file = args.find((a) => !a.startsWith('--')) ?? '.vitest-results.json';
let report: {
  numPassedTests?: number;
  numFailedTests?: number;
  numPendingTests?: number;
  numTodoTests?: number;
  testResults?: FileResult[];
};
try {
  report = JSON.parse(readFileSync(file, 'utf8')) as typeof report;
} catch (err) {
  console.error(`no vitest report at ${file}: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
const failed = report.numFailedTests ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`vitest${timingOnly ? ' test/timing' : ''}: ${passed} passed, ${failed} failed, ${skipped} skipped`);
if (timingOnly) process.exit(passed + failed === 0 ? 1 : 0);

function suite(dir: string): { passed: number; failed: number; skipped: number } {
  const tests = (report.testResults ?? []).filter((f) => (f.name ?? '').includes(`/test/${dir}/`)).flatMap((f) => f.assertionResults ?? []);
  return {
    passed: tests.filter((t) => t.status === 'passed').length,
    failed: tests.filter((t) => t.status === 'failed').length,
    skipped: tests.filter((t) => t.status !== 'passed' && t.status !== 'failed').length,
  };
}
const e2e = suite('e2e');
const opa = suite('opa');
const browser = suite('console/browser');
// test/support/browser.ts's choice: $CHROMIUM, else Debian's chromium when installed.
const chromium = process.env['CHROMIUM'] || (existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined);
if (!opaOnly)
  console.log(
    `  test/e2e (Kubernetes API server${process.env['E2E_KUBECONFIG'] ? ` from E2E_KUBECONFIG=${process.env['E2E_KUBECONFIG']}` : ': set E2E_KUBECONFIG to run'}): ${e2e.passed} passed, ${e2e.failed} failed, ${e2e.skipped} skipped`,
  );
if (!opaOnly)
  console.log(
    `  test/console/browser (a real browser${chromium ? `: chromium ${chromium}` : ": install Debian's chromium or set CHROMIUM to run"}): ${browser.passed} passed, ${browser.failed} failed, ${browser.skipped} skipped`,
  );
console.log(
  `  test/opa (OPA binary${process.env['OPA_BIN'] ? ` ${process.env['OPA_BIN']}` : ': set OPA_BIN to run'}): ${opa.passed} passed, ${opa.failed} failed, ${opa.skipped} skipped`,
);
if (passed + failed === 0) process.exit(1);
if (!opaOnly && process.env['E2E_KUBECONFIG'] && e2e.passed === 0) {
  console.error('E2E_KUBECONFIG is set but no e2e test passed');
  process.exit(1);
}
if (!opaOnly && chromium && browser.passed === 0) {
  console.error(`chromium is at ${chromium} but no test/console/browser test passed`);
  process.exit(1);
}
if (process.env['OPA_BIN'] && opa.passed === 0) {
  console.error(`OPA_BIN is set but no test/opa test passed: a real OPA must judge every run that has one`);
  process.exit(1);
}
