// The old home of describeIssues, now in issues.ts and exported by index.ts: src/controller still
// imports it from this path while it is being split. Delete this file once nothing imports it.
export { describeIssues } from './issues.ts';
