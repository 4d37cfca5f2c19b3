import {
  type CryptoKey,
  createRemoteJWKSet,
  importSPKI,
  type JWTPayload,
  type JWTVerifyGetKey,
  errors as joseErrors,
  jwtVerify,
} from 'jose';
import type { OidcConfig } from '../config/index.js';
import { unauthenticated } from '../shared/index.js';

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA'];

/** Verifies portal JWTs against the configured issuer's JWKS or a static public key. */
export class OidcVerifier {
  private keyPromise: Promise<CryptoKey | JWTVerifyGetKey>;

  constructor(private readonly config: OidcConfig) {
    this.keyPromise = config.jwksUrl
      ? Promise.resolve(
          createRemoteJWKSet(new URL(config.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 }),
        )
      : importPublicKey(config.publicKeyPem!);
  }

  get userClaim() {
    return this.config.userClaim;
  }
  get rolesClaim() {
    return this.config.rolesClaim;
  }

  async verify(token: string): Promise<JWTPayload> {
    const key = await this.keyPromise;
    try {
      const options = { issuer: this.config.issuer, audience: this.config.audience, algorithms: ALGORITHMS };
      const { payload } =
        typeof key === 'function'
          ? await jwtVerify(token, key, options)
          : await jwtVerify(token, key, options);
      return payload;
    } catch (error) {
      throw unauthenticated(describeJwtFailure(error));
    }
  }
}

async function importPublicKey(pem: string): Promise<CryptoKey> {
  for (const alg of ALGORITHMS) {
    try {
      return await importSPKI(pem, alg);
    } catch {
      // try the next algorithm family
    }
  }
  throw new Error('OIDC_PUBLIC_KEY is not a PEM public key (SPKI) of a supported algorithm');
}

function describeJwtFailure(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'The JWT has expired: sign in again.';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return 'The JWT was issued by an issuer this gateway does not trust.';
    if (error.claim === 'aud') return 'The JWT is meant for another audience.';
    return `The JWT's "${error.claim}" claim is not acceptable.`;
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'The JWT signature does not verify.';
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return 'The JWT was signed with a key the issuer does not publish.';
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return 'The JWT uses a signing algorithm that is not allowed.';
  if (error instanceof joseErrors.JWKSTimeout)
    return "The identity provider's keys could not be fetched in time.";
  return 'The JWT could not be verified.';
}
