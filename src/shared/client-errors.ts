/**
 * Errors a use case may raise on purpose. Each carries the code clients see in
 * `extensions.code`; anything else that escapes is masked as INTERNAL_SERVER_ERROR.
 * Shared by every layer that answers a client (auth, services, schema, server), so none
 * of them has to import another for its error type.
 */
export type ErrorCode =
  | 'BAD_USER_INPUT'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'RATE_LIMITED';

export class FairwayError extends Error {
  constructor(
    public readonly code: ErrorCode,
    message: string,
    public readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'FairwayError';
  }
}

export const badInput = (message: string, details?: Record<string, unknown>) =>
  new FairwayError('BAD_USER_INPUT', message, details);
export const unauthenticated = (
  message = 'Sign in first: send "Authorization: Bearer <API token or OIDC JWT>".',
) => new FairwayError('UNAUTHENTICATED', message);
export const forbidden = (message: string) => new FairwayError('FORBIDDEN', message);
/** The same answer whether the thing does not exist or belongs to another tenant. */
export const notFound = (what: string) => new FairwayError('NOT_FOUND', `${what} not found`);
export const conflict = (message: string) => new FairwayError('CONFLICT', message);
/** Too many requests: `retryAfterSeconds` tells the client when the next one will be accepted. */
export const rateLimited = (message: string, retryAfterSeconds: number) =>
  new FairwayError('RATE_LIMITED', message, { retryAfterSeconds });
