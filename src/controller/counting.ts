// A ClusterWriter that tells of each status and token Secret write, by tenant, after it succeeded:
// the console's live updates follow them (a phase can change without a publish).
import type { ClusterWriter } from './types.ts';

/** `writer`, calling `onWrite(tenant)` after each status and token Secret write. */
export function countingWriter(writer: ClusterWriter, onWrite: (tenant: string) => void): ClusterWriter {
  return {
    readTokenSecret: (ns, name) => writer.readTokenSecret(ns, name),
    writeTokenSecret: async (owner, secret) => {
      await writer.writeTokenSecret(owner, secret);
      onWrite(owner.metadata.namespace);
    },
    deleteTokenSecret: (ns, name) => writer.deleteTokenSecret(ns, name),
    writeStatus: async (key, status) => {
      await writer.writeStatus(key, status);
      onWrite(key.namespace);
    },
    ...(writer.recordEvent ? { recordEvent: writer.recordEvent.bind(writer) } : {}),
  };
}
