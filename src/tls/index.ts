export { expiresWithin, selfSignedCertificate } from './certificate.ts';
export { ensureSelfSigned } from './localhost.ts';
