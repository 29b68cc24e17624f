export { generateToken, hashesEqual, hashToken, parseBearer, TOKEN_PREFIX } from './token.ts';
