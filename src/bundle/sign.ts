// The `.signatures.json` of one archive (OPA's bundle signing): one JWT listing `.manifest` by the
// hash OPA computes for a structured file and `policy.rego` by the sha256 of its bytes, which the
// build already has (the input digest is computed from it), so signing never hashes megabytes again.
import { signaturesFile, structuredHash, type SigningKey } from '../signing/index.ts';

/** `.signatures.json` for an archive of this `.manifest` and a policy.rego whose sha256 (hex) is `regoHex`, signed with `key`. */
export function bundleSignatures(manifest: string, regoHex: string, key: SigningKey): string {
  return signaturesFile(
    [
      { name: '.manifest', hash: structuredHash(manifest) },
      { name: 'policy.rego', hash: regoHex },
    ],
    key,
  );
}
