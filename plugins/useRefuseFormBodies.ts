import { createGraphQLError, type Plugin } from 'graphql-yoga';

/** Bodies a cross-site HTML form can send without a preflight; this API has no uploads to take them for. */
const FORM_CONTENT_TYPES = ['multipart/form-data', 'application/x-www-form-urlencoded'];

/**
 * Refuses multipart and url-encoded form POSTs with 415 before yoga parses them. yoga executes
 * both by default, and the CSRF check alone lets them through when they carry its header.
 */
export function useRefuseFormBodies(): Plugin {
  return {
    onRequestParse({ request }) {
      if (request.method !== 'POST') return;
      const contentType = (request.headers.get('content-type') ?? '').split(',')[0]!.trim().toLowerCase();
      const form = FORM_CONTENT_TYPES.find(
        (type) => contentType === type || contentType.startsWith(`${type};`),
      );
      if (!form) return;
      throw createGraphQLError(
        `Content-Type ${form} is not accepted: send the operation as application/json.`,
        {
          extensions: { code: 'BAD_REQUEST', http: { status: 415 } },
        },
      );
    },
  };
}
