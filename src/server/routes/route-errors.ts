/**
 * The JSON error body of the server's own GET routes (`/metrics`, `/usage/export.csv`): the
 * same shape and headers for each, `{ error: { code, message } }`, never cached.
 */
export function jsonRouteError(
  Response: typeof globalThis.Response,
  status: number,
  code: string,
  message: string,
): Response {
  return new Response(JSON.stringify({ error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  });
}

/** A path of the route table asked with a method none of its routes answers: 405, "Use GET.". */
export function methodNotAllowed(allowed: readonly string[], Response: typeof globalThis.Response): Response {
  return jsonRouteError(Response, 405, 'METHOD_NOT_ALLOWED', `Use ${allowed.join(' or ')}.`);
}
