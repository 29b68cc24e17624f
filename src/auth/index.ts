export { generateToken, hashesEqual, hashToken, parseBearer, tokenMatches, TOKEN_PREFIX } from './token.ts';
