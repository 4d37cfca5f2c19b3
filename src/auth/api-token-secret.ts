import { createHash, randomBytes } from 'node:crypto';

/** API token secrets look like `fwt_<43 base64url chars>`: easy to spot in a leaked log. */
export const API_TOKEN_PREFIX = 'fwt_';

export function generateApiTokenSecret(): string {
  return API_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function hashApiTokenSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function looksLikeApiToken(bearer: string): boolean {
  return bearer.startsWith(API_TOKEN_PREFIX);
}

/** What is shown later to tell tokens apart: the prefix and a few characters. */
export function displayPrefix(secret: string): string {
  return secret.slice(0, API_TOKEN_PREFIX.length + 6);
}
