// The shape of a test file (docs/testing.md#test-files), as zod schemas: the single source of which
// keys exist. Every object is strict, so a misspelt key (`expected:`) is an error, never ignored. The
// request parts are checked afterwards by the mapping the API uses (cases.ts), so they read as the
// API's own refusals.
import { z } from 'zod';

const Text = z.string().min(1);

/** A request in OPA's input shape, as an OPA sidecar is queried. */
const OpaInput = z.strictObject({
  principal: z.unknown().optional(),
  action: z.unknown().optional(),
  resource: z.unknown().optional(),
  context: z.unknown().optional(),
  actionProperties: z.unknown().optional(),
});

/** The request parts of the service's and AuthZEN's shape; a string subject or resource names an entity. */
const RequestParts = {
  subject: z.unknown().optional(),
  action: z.unknown().optional(),
  resource: z.unknown().optional(),
  context: z.unknown().optional(),
  input: OpaInput.optional(),
};

export const TestCase = z.strictObject({
  name: Text,
  expect: z.enum(['allow', 'deny']),
  /** The rule that allows (a name of the tenant's Rules). */
  rule: Text.optional(),
  /** A fragment one of the decision's reasons contains. */
  reason: Text.optional(),
  tenant: Text.optional(),
  /** The bundle(s) OPA decides the case on, instead of every bundle that admits it. */
  bundle: z.union([Text, z.array(Text).min(1)]).optional(),
  ...RequestParts,
});
export type TestCase = z.infer<typeof TestCase>;

export const Defaults = z.strictObject(RequestParts);
export type Defaults = z.infer<typeof Defaults>;

export const TestFile = z.strictObject({
  tenant: Text.optional(),
  /** Named request entities a case's subject or resource may name instead of spelling out. */
  entities: z.record(Text, z.record(z.string(), z.unknown())).optional(),
  defaults: Defaults.optional(),
  cases: z.array(TestCase).min(1),
});
export type TestFile = z.infer<typeof TestFile>;

/** The keys each strict object allows, for "did you mean" and "allowed" in messages. */
export const KEYS = {
  file: Object.keys(TestFile.shape),
  case: Object.keys(TestCase.shape),
  defaults: Object.keys(Defaults.shape),
  input: Object.keys(OpaInput.shape),
} as const;
