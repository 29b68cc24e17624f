export {
  generateSigningKeyPem,
  GENERATED_RSA_BITS,
  KeyProblem,
  readSigningKey,
  ringKeys,
  type KeyRing,
  type SigningKey,
} from './keys.ts';
export { SIGNATURES_FILE, signaturesFile, structuredHash, verifySignaturesFile } from './signatures.ts';
