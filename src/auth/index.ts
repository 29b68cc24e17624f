export { generateToken, hashToken, parseBearer, tokenMatches, TOKEN_PREFIX } from './token.ts';
