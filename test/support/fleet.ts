// What OPA agents and their bundle entries look like to the fleet, for tests: the defaults of an
// agent that reported once and runs a revision, and of its report's entry for one bundle.
import type { Agent, BundleReport } from '../../src/fleet/index.ts';

/** One bundle's entry in a status report: revision 3 active, nothing failed. */
export const bundleEntry = (name: string, over: Partial<BundleReport> = {}): BundleReport => ({
  name,
  activeRevision: '3',
  lastActivation: undefined,
  lastDownload: undefined,
  error: undefined,
  httpCode: undefined,
  stopping: false,
  ...over,
});

/** An agent as the registry holds it: OPA 1.1.0, no key label, no error, one bundle of ours. */
export const agentFixture = (id: string, over: Partial<Agent> = {}): Agent => ({
  id,
  version: '1.1.0',
  signingKey: undefined,
  clientIp: '10.0.0.1',
  lastReportMs: 0,
  activeRevision: '5',
  lastActivation: undefined,
  lastDownload: undefined,
  error: undefined,
  httpCode: undefined,
  alsoLoads: [],
  ...over,
});
