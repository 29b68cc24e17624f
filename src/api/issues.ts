// How a schema's rejection reads in one line of status or problem text.
import type { z } from 'zod';

/** "spec.actions: Too small: expected array to have >=1 items; metadata.name: …" */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length > 0 ? `${i.path.map(String).join('.')}: ` : ''}${i.message}`).join('; ');
}
