export {
  generateSigningKeyPem,
  GENERATED_RSA_BITS,
  KeyProblem,
  keyIdOf,
  MIN_RSA_BITS,
  readSigningKey,
  ringKey,
  ringKeys,
  type KeyRing,
  type SigningKey,
} from './keys.ts';
export { SIGNATURES_FILE, signaturesFile, structuredHash, verifySignaturesFile, type SignedFile } from './signatures.ts';
